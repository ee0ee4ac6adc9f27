use tokio::io::AsyncReadExt as _;

use super::*;

const A: &str = "1111111111111111111111111111111111111111";
const B: &str = "2222222222222222222222222222222222222222";

fn line(text: &str) -> Vec<u8> {
    let mut out = Vec::new();
    packet(&mut out, text.as_bytes());
    out
}

/// A push's body: `commands` (the first with `capabilities`), a flush and
/// a pack header claiming `objects`, then a few bytes of "pack".
fn push(commands: &[String], capabilities: &str, objects: Option<u32>) -> Vec<u8> {
    let mut body = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let text = if i == 0 { format!("{command}\0{capabilities}\n") } else { format!("{command}\n") };
        body.extend(line(&text));
    }
    body.extend(b"0000");
    if let Some(objects) = objects {
        body.extend(b"PACK\0\0\0\x02");
        body.extend(objects.to_be_bytes());
        body.extend(b"objects...");
    }
    body
}

fn bounds(max_refs: usize, max_objects: u64) -> PushBounds {
    PushBounds { max_refs, max_objects }
}

async fn run(body: &[u8], bounds: PushBounds) -> (Admission, Vec<u8>, Vec<u8>) {
    let mut reader = body;
    let mut passed = Vec::new();
    let admission = admit(&mut reader, Some(&mut passed), bounds).await.unwrap();
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).await.unwrap();
    (admission, passed, rest)
}

#[tokio::test]
async fn an_admitted_push_passes_its_head_on_unchanged_and_leaves_the_pack() {
    let commands = [format!("{ZERO_ID} {A} refs/heads/main"), format!("{A} {B} refs/tags/v1")];
    let body = push(&commands, "report-status side-band-64k agent=git/2", Some(3));
    let (admission, passed, rest) = run(&body, bounds(2, 3)).await;
    let Admission::Admitted(head) = admission else { panic!("{admission:?}") };
    assert_eq!(head.commands.len(), 2);
    assert_eq!(head.commands[0], Command { old: ZERO_ID.into(), new: A.into(), name: "refs/heads/main".into() });
    assert!(head.commands[0].creates() && !head.commands[1].deletes());
    assert_eq!(head.capabilities, Capabilities { report_status: true, side_band: Some(65515) });
    assert_eq!([passed, rest].concat(), body, "every byte reaches Git, in order");
}

#[tokio::test]
async fn more_refs_than_the_bound_are_refused_before_the_end_of_the_commands_reaches_git() {
    let commands: Vec<String> = (0..5).map(|i| format!("{ZERO_ID} {A} refs/heads/b{i}")).collect();
    let body = push(&commands, "report-status", Some(1));
    let (admission, passed, _) = run(&body, bounds(3, 10)).await;
    let Admission::Refused(head, reason) = admission else { panic!("{admission:?}") };
    assert_eq!(reason, "a push may update at most 3 refs");
    assert_eq!(head.commands.len(), 4);
    assert!(!passed.ends_with(b"0000"), "receive-pack never sees the end of the commands");
}

#[tokio::test]
async fn a_pack_of_more_objects_than_the_bound_is_refused_before_its_header_reaches_git() {
    let body = push(&[format!("{A} {B} refs/heads/main")], "report-status", Some(11));
    let (admission, passed, _) = run(&body, bounds(10, 10)).await;
    assert_eq!(
        admission,
        Admission::Refused(
            Head {
                commands: vec![Command { old: A.into(), new: B.into(), name: "refs/heads/main".into() }],
                capabilities: Capabilities { report_status: true, side_band: None },
            },
            "a push may send at most 10 objects, this one has 11".into()
        )
    );
    assert!(passed.ends_with(b"0000") && !passed.windows(4).any(|w| w == b"PACK"));
}

#[tokio::test]
async fn deletions_need_no_pack_and_shallow_lines_are_not_refs() {
    let mut body = line(&format!("shallow {A}\n"));
    body.extend(push(&[format!("{A} {ZERO_ID} refs/heads/old")], "report-status", None));
    let (admission, passed, _) = run(&body, bounds(1, 1)).await;
    let Admission::Admitted(head) = admission else { panic!("{admission:?}") };
    assert!(head.commands[0].deletes());
    assert_eq!(passed, body);
}

#[tokio::test]
async fn what_receive_pack_would_read_otherwise_is_refused() {
    let signed = [line("push-cert\0report-status\n"), line(&format!("{ZERO_ID} {A} refs/heads/x\n"))].concat();
    let malformed = [line("not a command\n"), b"0000".to_vec()].concat();
    let bad_length = b"00zz".to_vec();
    let too_long_name = push(&[format!("{ZERO_ID} {A} refs/heads/{}", "x".repeat(5000))], "", None);
    let control = push(&[format!("{ZERO_ID} {A} refs/heads/a\tb")], "", None);
    for body in [signed, malformed, bad_length, too_long_name, control] {
        let (admission, passed, _) = run(&body, bounds(10, 10)).await;
        assert!(matches!(admission, Admission::Refused(..)), "{admission:?}");
        assert!(passed.is_empty(), "nothing of a refused line reaches Git");
    }
    let (cut, _, _) = run(&line(&format!("{ZERO_ID} {A} refs/heads/x\n"))[..20], bounds(10, 10)).await;
    assert!(matches!(cut, Admission::Refused(_, reason) if reason.contains("ended")));
}

#[tokio::test]
async fn a_delim_packet_ends_the_commands_as_it_does_in_receive_pack() {
    let body = [line(&format!("{ZERO_ID} {A} refs/heads/a\0report-status\n")), b"0001".to_vec()].concat();
    let with_more = [body.clone(), line(&format!("{ZERO_ID} {A} refs/heads/b\n"))].concat();
    let (admission, _, rest) = run(&with_more, bounds(1, 1)).await;
    let Admission::Admitted(head) = admission else { panic!("{admission:?}") };
    assert_eq!(head.commands.len(), 1, "what follows is the pack, not a command");
    assert!(!rest.is_empty());
}

async fn text(response: GitHttpResponse) -> (u16, String) {
    let mut body = Vec::new();
    let mut reader = response.body;
    reader.read_to_end(&mut body).await.unwrap();
    (response.status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn a_refused_push_is_answered_with_git_s_own_report() {
    let head = |capabilities| Head {
        commands: vec![
            Command { old: ZERO_ID.into(), new: A.into(), name: "refs/heads/a".into() },
            Command { old: A.into(), new: B.into(), name: "refs/heads/b".into() },
        ],
        capabilities,
    };
    let plain = Capabilities { report_status: true, side_band: None };
    let (status, body) = text(refused_push(&head(plain), "too big")).await;
    assert_eq!(status, 200);
    assert_eq!(body, "0013unpack too big\n001cng refs/heads/a too big\n001cng refs/heads/b too big\n0000");
    let banded = Capabilities { report_status: true, side_band: Some(65515) };
    let (_, body) = text(refused_push(&head(banded), "too big")).await;
    assert_eq!(body, "0054\u{1}0013unpack too big\n001cng refs/heads/a too big\n001cng refs/heads/b too big\n00000000");
    let (status, body) = text(refused_push(&head(Capabilities::default()), "too big")).await;
    assert_eq!((status, body.as_str()), (403, "too big\n"));
    let (status, body) = text(refused_push(&Head::default(), "too big")).await;
    assert_eq!((status, body.as_str()), (200, ""), "Git's probe is answered as receive-pack answers it");
    let (status, body) = text(refused_advertisement("switched off")).await;
    assert_eq!((status, body.as_str()), (200, "0015ERR switched off\n"));
}
