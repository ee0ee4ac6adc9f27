use super::files::{MAX_PUSH_BYTES, MAX_PUSH_FILES, check_path};
use super::*;
use crate::Error;

fn file(path: &str, content: &str) -> PushFile {
    PushFile { path: path.into(), content: content.as_bytes().to_vec() }
}

fn messages(error: Error) -> Vec<(String, Vec<String>)> {
    match error {
        Error::Validation(errors) => errors.into_iter().collect(),
        other => panic!("expected a validation error, got {other:?}"),
    }
}

#[test]
fn paths_that_leave_the_tree_or_reach_git_are_refused() {
    for attack in [
        "../etc/passwd",
        "a/../../b",
        "/etc/passwd",
        "./a",
        ".git/config",
        ".GIT/hooks/pre-commit",
        "a/.git/config",
        ".git./config",
        ".git /config",
        "git~1/config",
        "GIT~1/hooks/x",
        "a\\..\\b",
        "a//b",
        "a/",
        "",
        "a\0b",
        "a\nb",
    ] {
        assert!(check_path(attack).is_err(), "{attack:?} was accepted");
    }
    for fine in ["README.md", "src/main.rs", ".github/workflows/ci.yml", ".gitignore", "a/b.git/c", "ünïcode/файл.txt"]
    {
        assert_eq!(check_path(fine), Ok(()), "{fine:?}");
    }
    assert!(check_path(&"a/".repeat(600)).is_err(), "too long");
    assert!(check_path(&"x".repeat(256)).is_err(), "a segment too long");
}

#[test]
fn a_push_is_checked_whole_and_field_by_field() {
    let error = PushFiles::check(vec![file("ok.txt", "1"), file("../x", "2"), file("ok.txt", "3")], "m").unwrap_err();
    let found = messages(error);
    let names: Vec<&str> = found.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(names, ["files[1].path", "files[2].path"], "{found:?}");
    assert!(found[1].1[0].contains("named twice"), "{found:?}");

    let error = PushFiles::check(vec![file("a", "1"), file("a/b", "2")], "m").unwrap_err();
    assert!(messages(error)[0].1[0].contains("cannot also be a folder"));

    let error = PushFiles::check(vec![], " ").unwrap_err();
    let names: Vec<String> = messages(error).into_iter().map(|(f, _)| f).collect();
    assert_eq!(names, ["files", "message"]);

    let ok = PushFiles::check(vec![file("a/b", "1"), file("a/c", "2"), file("d", "")], "add").unwrap();
    assert_eq!((ok.len(), ok.message()), (3, "add"));
}

#[test]
fn bounds_are_checked_before_paths() {
    let many: Vec<PushFile> = (0..=MAX_PUSH_FILES).map(|i| file(&format!("../{i}"), "")).collect();
    let found = messages(PushFiles::check(many, "m").unwrap_err());
    assert_eq!(found.len(), 1, "only the count is reported: {found:?}");
    assert!(found[0].1[0].contains("at most 1000 files"));

    let big = vec![PushFile { path: "big".into(), content: vec![b'x'; MAX_PUSH_BYTES + 1] }];
    let found = messages(PushFiles::check(big, "m").unwrap_err());
    assert!(found[0].1[0].contains("bytes of content"), "{found:?}");
}

#[test]
fn repository_names_follow_one_rule() {
    for fine in ["app", "my-app_2.0", "0day"] {
        assert!(check_repo_name("name", fine).is_ok(), "{fine:?}");
    }
    for bad in ["", "-app", ".app", "app.git", "app.lock", "a/b", "a b", "../x", &"x".repeat(101)] {
        assert!(check_repo_name("name", bad).is_err(), "{bad:?} was accepted");
    }
    let message = messages(check_repo_name("name", "MyApp").unwrap_err())[0].1[0].clone();
    assert!(message.contains("\"myapp\""), "the error says what to use instead: {message}");
}

#[test]
fn full_names_parse_into_owner_and_name() {
    let full = FullName::parse("repo", "team-a/app").unwrap();
    assert_eq!((full.owner.as_str(), full.name.as_str()), ("team-a", "app"));
    assert_eq!(full.to_string(), "team-a/app");
    for bad in ["app", "/app", "team/", "../app", "team/a/b", "te am/app", "team/App"] {
        assert!(FullName::parse("repo", bad).is_err(), "{bad:?} was accepted");
    }
}
