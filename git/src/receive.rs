//! A push read before Git sees it (issue #49, item 6): receive-pack's
//! commands (one pkt-line per ref to update) and its pack's header, counted
//! against the bounds as they pass on their way to `git http-backend`, and
//! the answers `git push` prints when play refuses a push.
//!
//! # Invariants
//!
//! - receive-pack acts only after it has read the end of the commands and,
//!   unless every command deletes, the 12-byte pack header. Both are
//!   passed on only once the commands are counted and the header's object
//!   count is checked, so a refused push changes nothing: receive-pack
//!   sees its input end early and stops.
//! - This reader ends the commands where receive-pack does (at any special
//!   packet: flush, delim or response-end) and refuses what it cannot read
//!   the way receive-pack would (a malformed line, a signed push's
//!   certificate, which carries its own commands), so no command reaches
//!   Git uncounted.
//! - A refusal is Git's own answer: to the advertisement an `ERR` packet
//!   (`fatal: remote error: ...`), to the push a report with `unpack
//!   <reason>` and `ng <ref> <reason>` for each ref (`! [remote rejected]
//!   ... (<reason>)`), in the side band when the client asked for one.

use std::io;

use play_model::scm::http::GitHttpResponse;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::body::BodyError;

/// An object id of nothing: a command creating (old) or deleting (new).
const ZERO_ID: &str = "0000000000000000000000000000000000000000";

/// The longest pkt-line, length included (Git's `LARGE_PACKET_MAX`).
const MAX_PACKET: usize = 65520;

/// The longest ref name read: the longest path Linux opens (a loose ref is
/// a file), so no ref Git could write is refused.
const MAX_REF_NAME: usize = 4096;

/// One ref a push asks to update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Command {
    pub old: String,
    pub new: String,
    pub name: String,
}

impl Command {
    pub(crate) fn deletes(&self) -> bool {
        self.new == ZERO_ID
    }

    pub(crate) fn creates(&self) -> bool {
        self.old == ZERO_ID
    }
}

/// What the client asked of the answer (its first line's capabilities).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Capabilities {
    /// `report-status` or `report-status-v2`: the client reads a report.
    pub report_status: bool,
    /// The most bytes of one side-band packet's payload, when the answer
    /// goes in the side band (`side-band-64k`, `side-band`).
    pub side_band: Option<usize>,
}

impl Capabilities {
    fn parse(list: &str) -> Capabilities {
        let mut capabilities = Capabilities::default();
        for word in list.split_whitespace() {
            match word {
                "report-status" | "report-status-v2" => capabilities.report_status = true,
                "side-band-64k" => capabilities.side_band = Some(MAX_PACKET - 5),
                "side-band" if capabilities.side_band.is_none() => capabilities.side_band = Some(1000 - 5),
                _ => {}
            }
        }
        capabilities
    }
}

/// A push's commands as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Head {
    pub commands: Vec<Command>,
    pub capabilities: Capabilities,
}

/// The bounds a push's head is read against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PushBounds {
    pub max_refs: usize,
    pub max_objects: u64,
}

/// Whether a push may go on to Git.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admission {
    /// Its head has been passed on; the rest of the body is the pack.
    Admitted(Head),
    /// Refused, for this reason; what was passed on ends there.
    Refused(Head, String),
}

/// Reads a push's commands and pack header from `body`, passing each on to
/// `git` (when given) once it is within the bounds; see the [module
/// documentation](self). An error only when the connection or Git failed.
pub(crate) async fn admit<R, W>(body: &mut R, mut git: Option<&mut W>, bounds: PushBounds) -> io::Result<Admission>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut head = Head::default();
    let mut asked = false;
    loop {
        let mut length = [0u8; 4];
        if let Err(e) = body.read_exact(&mut length).await {
            return ended(head, &e);
        }
        let Some(size) = std::str::from_utf8(&length).ok().and_then(|hex| usize::from_str_radix(hex, 16).ok()) else {
            return Ok(Admission::Refused(head, "malformed request: a bad pkt-line length".into()));
        };
        if size < 4 {
            if size == 3 {
                return Ok(Admission::Refused(head, "malformed request: a bad pkt-line length".into()));
            }
            pass(&mut git, &[&length]).await?;
            break;
        }
        if size > MAX_PACKET {
            return Ok(Admission::Refused(head, "malformed request: a pkt-line too long".into()));
        }
        let mut payload = vec![0u8; size - 4];
        if let Err(e) = body.read_exact(&mut payload).await {
            return ended(head, &e);
        }
        if payload.starts_with(b"shallow ") {
            pass(&mut git, &[&length, &payload]).await?;
            continue;
        }
        let (line, capabilities) = match payload.iter().position(|b| *b == 0) {
            Some(nul) => (&payload[..nul], Some(&payload[nul + 1..])),
            None => (&payload[..], None),
        };
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        if line == b"push-cert" {
            return Ok(Admission::Refused(head, "signed pushes are not accepted".into()));
        }
        let Some(command) = command(line) else {
            return Ok(Admission::Refused(head, "malformed request: a command that is not <old> <new> <ref>".into()));
        };
        if let (Some(list), false) = (capabilities, asked) {
            head.capabilities = Capabilities::parse(&String::from_utf8_lossy(list));
            asked = true;
        }
        head.commands.push(command);
        if head.commands.len() > bounds.max_refs {
            let reason = format!("a push may update at most {} refs", bounds.max_refs);
            return Ok(Admission::Refused(head, reason));
        }
        pass(&mut git, &[&length, &payload]).await?;
    }
    if head.commands.iter().all(Command::deletes) {
        return Ok(Admission::Admitted(head));
    }
    let mut header = Vec::with_capacity(12);
    if let Err(e) = (&mut *body).take(12).read_to_end(&mut header).await {
        return ended(head, &e);
    }
    if header.len() == 12 && header.starts_with(b"PACK") {
        let objects = u64::from(u32::from_be_bytes([header[8], header[9], header[10], header[11]]));
        if objects > bounds.max_objects {
            let reason = format!("a push may send at most {} objects, this one has {objects}", bounds.max_objects);
            return Ok(Admission::Refused(head, reason));
        }
    }
    pass(&mut git, &[&header]).await?;
    Ok(Admission::Admitted(head))
}

/// A read of the body that failed: the body's own failure refuses the
/// push; the connection's is an error.
fn ended(head: Head, error: &io::Error) -> io::Result<Admission> {
    if let Some(failure) = BodyError::of(error) {
        return Ok(Admission::Refused(head, failure.to_string()));
    }
    if error.kind() == io::ErrorKind::UnexpectedEof {
        return Ok(Admission::Refused(head, "the request ended before its commands did".into()));
    }
    Err(io::Error::new(error.kind(), error.to_string()))
}

async fn pass<W: AsyncWrite + Unpin>(git: &mut Option<&mut W>, parts: &[&[u8]]) -> io::Result<()> {
    if let Some(git) = git {
        for part in parts {
            git.write_all(part).await?;
        }
    }
    Ok(())
}

/// `<old> <new> <ref>`, both ids 40 hexadecimal digits, the name without
/// control characters.
fn command(line: &[u8]) -> Option<Command> {
    let text = std::str::from_utf8(line).ok()?;
    let mut parts = text.splitn(3, ' ');
    let (old, new, name) = (parts.next()?, parts.next()?, parts.next()?);
    let id = |s: &str| s.len() == 40 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let name_ok = !name.is_empty() && name.len() <= MAX_REF_NAME && !name.bytes().any(|b| b < 0x20 || b == 0x7f);
    (id(old) && id(new) && name_ok).then(|| Command { old: old.to_owned(), new: new.to_owned(), name: name.to_owned() })
}

/// Appends `payload` as one pkt-line.
fn packet(out: &mut Vec<u8>, payload: &[u8]) {
    out.extend_from_slice(format!("{:04x}", payload.len() + 4).as_bytes());
    out.extend_from_slice(payload);
}

fn answer(status: u16, content_type: &str, body: Vec<u8>) -> GitHttpResponse {
    GitHttpResponse {
        status,
        headers: vec![
            ("Content-Type".into(), content_type.into()),
            ("Cache-Control".into(), "no-cache, max-age=0, must-revalidate".into()),
        ],
        body: Box::new(std::io::Cursor::new(body)),
        moved: None,
    }
}

/// The answer to `GET info/refs?service=git-receive-pack` of a push
/// refused before it starts: `git push` prints `fatal: remote error:
/// <reason>` and sends nothing.
pub(crate) fn refused_advertisement(reason: &str) -> GitHttpResponse {
    let mut body = Vec::new();
    packet(&mut body, format!("ERR {reason}\n").as_bytes());
    answer(200, "application/x-git-receive-pack-advertisement", body)
}

/// The answer to a push refused for `reason`: receive-pack's report with
/// every ref of `head` rejected. A client that asked for no report gets
/// `403` and the reason (it would otherwise take silence for success).
pub(crate) fn refused_push(head: &Head, reason: &str) -> GitHttpResponse {
    if head.commands.is_empty() {
        // Nothing was asked (Git's probe of a large push): nothing to report.
        return answer(200, "application/x-git-receive-pack-result", Vec::new());
    }
    if !head.capabilities.report_status {
        return answer(403, "text/plain; charset=utf-8", format!("{reason}\n").into_bytes());
    }
    let mut report = Vec::new();
    packet(&mut report, format!("unpack {reason}\n").as_bytes());
    for command in &head.commands {
        packet(&mut report, format!("ng {} {reason}\n", command.name).as_bytes());
    }
    report.extend_from_slice(b"0000");
    let body = match head.capabilities.side_band {
        None => report,
        Some(most) => {
            let mut banded = Vec::with_capacity(report.len() + report.len() / most * 5 + 9);
            for piece in report.chunks(most) {
                let mut payload = Vec::with_capacity(piece.len() + 1);
                payload.push(1);
                payload.extend_from_slice(piece);
                packet(&mut banded, &payload);
            }
            banded.extend_from_slice(b"0000");
            banded
        }
    };
    answer(200, "application/x-git-receive-pack-result", body)
}

#[cfg(test)]
#[path = "receive_tests.rs"]
mod tests;
