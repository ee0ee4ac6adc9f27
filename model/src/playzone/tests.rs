use super::*;

fn policy() -> RepositoryPolicy {
    RepositoryPolicy::default()
}

fn create(url: &str) -> Input {
    Input { name: Some("app".into()), scm_url: Some(url.into()), ..Input::default() }
}

fn messages(errors: &FieldErrors, field: &str) -> Vec<String> {
    errors.get(field).cloned().unwrap_or_default()
}

#[test]
fn a_valid_create_is_normalised() {
    let changes = Changes::validate(create("https://git.example.org/team/app.git/"), None, &policy()).expect("valid");
    assert_eq!(changes.scm_url.as_deref(), Some("https://git.example.org/team/app.git"));
    assert!(changes.needs_sync());
}

#[test]
fn create_requires_name_and_url_and_reports_every_field() {
    let errors = Changes::validate(Input::default(), None, &policy()).expect_err("empty");
    assert_eq!(messages(&errors, "playzone.name"), ["is required"]);
    assert_eq!(messages(&errors, "playzone.scm_url"), ["is required"]);
}

#[test]
fn hostile_urls_are_refused() {
    for url in [
        "http://git.example.org/a.git",
        "https://token@git.example.org/a.git",
        "https://user:pw@git.example.org/a.git",
        "https://127.0.0.1/a.git",
        "https://169.254.169.254/latest",
        "https://10.0.0.8/a.git",
        "https://[::1]/a.git",
        "https://localhost/a.git",
        "https://internal/a.git",
        "ssh://git@127.0.0.1/a.git",
        "ssh://git@localhost:2222/a.git",
        "git@10.0.0.8:team/app.git",
        "ssh://git@git.example.org/a.git';reboot'",
        "git@github.com:-oProxyCommand=x",
        "file:///etc/passwd",
        "https://git.example.org/a.git?x=1",
        "https://git.example.org/a.git#frag",
        " https://git.example.org/a.git",
    ] {
        let errors = Changes::validate(create(url), None, &policy()).expect_err(url);
        assert!(!messages(&errors, "playzone.scm_url").is_empty(), "{url}: {errors:?}");
    }
}

#[test]
fn the_operator_allowlist_and_http_setting_open_loopback() {
    let open = RepositoryPolicy {
        urls: UrlPolicy { allow_http: true, ..UrlPolicy::default() }
            .allow(crate::webhook::AllowEntry::parse("127.0.0.1").expect("entry")),
    };
    Changes::validate(create("http://127.0.0.1:9418/a.git"), None, &open).expect("allowlisted");
    Changes::validate(create("http://127.0.0.2/a.git"), None, &open).expect_err("not allowlisted");
}

#[test]
fn a_private_repository_needs_a_token() {
    let mut input = create("https://git.example.org/a.git");
    input.private = Some(true);
    let errors = Changes::validate(input.clone(), None, &policy()).expect_err("no token");
    assert!(messages(&errors, "playzone.credentials")[0].contains("access token"));
    input.credentials = Some("ghp_abc123".into());
    Changes::validate(input, None, &policy()).expect("token given");
    // On update the stored token counts, and removing it is refused.
    let stored =
        Stored { private: true, has_token: true, attached: false, scm_url: "https://git.example.com/team/app" };
    Changes::validate(Input::default(), Some(stored), &policy()).expect("keeps the token");
    let remove = Input { credentials: Some(String::new()), ..Input::default() };
    Changes::validate(remove, Some(stored), &policy()).expect_err("private without a token");
}

/// Issue #27, item 1: a stored token follows a new path on its origin,
/// never a new origin.
#[test]
fn a_stored_token_never_follows_the_url_to_another_origin() {
    let url = |u: &str| Input { scm_url: Some(u.into()), ..Input::default() };
    let public =
        Stored { private: false, has_token: true, attached: false, scm_url: "https://git.example.com/team/app" };
    let same = Changes::validate(url("https://git.example.com/team/other.git"), Some(public), &policy()).unwrap();
    assert_eq!(same.credentials, None, "same origin: the token stays");
    for elsewhere in [
        "https://attacker.example/team/app",
        "https://git.example.com:8443/team/app",
        "https://git.example.com.attacker.example/team/app",
    ] {
        let moved = Changes::validate(url(elsewhere), Some(public), &policy()).unwrap();
        assert_eq!(moved.credentials, Some(None), "{elsewhere}: the stored token is dropped");
    }
    let mut with_token = url("https://attacker.example/team/app");
    with_token.credentials = Some("tok-given-again".into());
    let given = Changes::validate(with_token, Some(public), &policy()).unwrap();
    assert_eq!(given.credentials, Some(Some("tok-given-again".into())), "a token sent again is kept");

    let private = Stored { private: true, ..public };
    let errors = Changes::validate(url("https://attacker.example/app"), Some(private), &policy()).unwrap_err();
    assert!(messages(&errors, "playzone.credentials")[0].contains("another origin"), "{errors:?}");
    assert!(same_origin("https://h.example/a", "https://H.example:443/b"), "default port, case");
    assert!(!same_origin("https://h.example/a", "not a url"));
}

/// Issue #49, item 1: an attached Playzone's URL is its repository's; a
/// key that may edit the Playzone cannot point it (and the installation's
/// token) at another host, on any origin, with or without `private`.
#[test]
fn an_attached_playzones_url_never_moves() {
    let attached =
        Stored { private: true, has_token: false, attached: true, scm_url: "https://github.com/acme/app.git" };
    for elsewhere in ["https://elsewhere.example/x.git", "https://github.com/acme/other.git"] {
        let input = Input { scm_url: Some(elsewhere.into()), private: Some(false), ..Input::default() };
        let errors = Changes::validate(input, Some(attached), &policy()).expect_err(elsewhere);
        assert!(messages(&errors, "playzone.scm_url")[0].contains("attach"), "{errors:?}");
    }
    let same = Input { scm_url: Some("https://github.com/acme/app.git/".into()), ..Input::default() };
    Changes::validate(same, Some(attached), &policy()).expect("the same URL is no move");
    let renamed = Input { name: Some("web".into()), ..Input::default() };
    Changes::validate(renamed, Some(attached), &policy()).expect("other fields change");
}

#[test]
fn tokens_are_bounded_printable_ascii() {
    for bad in ["has space", "tab\tin", "é", &"x".repeat(MAX_CREDENTIALS_CHARS + 1)] {
        assert!(check_token(bad).is_err(), "{bad}");
    }
    check_token("ghp_0123456789abcdef").expect("token");
}

#[test]
fn changes_never_show_the_token() {
    let mut input = create("https://git.example.org/a.git");
    input.credentials = Some("tok-very-secret".into());
    let changes = Changes::validate(input, None, &policy()).expect("valid");
    let shown = format!("{changes:?}");
    assert!(!shown.contains("tok-very-secret"), "{shown}");
}

#[test]
fn branch_names() {
    for good in ["main", "feature/login", "release-1.2", "user+fix", "v1.0_rc"] {
        branch_name(good).expect(good);
    }
    for bad in [
        "",
        "-x",
        ".hidden",
        "a..b",
        "a//b",
        "/a",
        "a/",
        "a.lock",
        "a.",
        "has space",
        "a~1",
        "a^",
        "a:b",
        "a?",
        "a*",
        "a[",
        "a\\b",
        "@{u}",
        "ü",
        "a\0",
    ] {
        assert!(branch_name(bad).is_err(), "{bad:?}");
    }
    assert!(branch_name(&"a".repeat(MAX_BRANCH_BYTES + 1)).is_err());
}

#[test]
fn repository_paths() {
    for good in [".env.example", "config/.env", "docker/Dockerfile.dev"] {
        repo_path(good).expect(good);
    }
    for bad in ["", "/etc/passwd", "../x", "a/../b", "./a", "a//b", "a b", "a\\b", "a/"] {
        assert!(repo_path(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn statuses_round_trip() {
    for s in Status::ALL {
        assert_eq!(Status::parse(s.as_str()), Some(s));
    }
    assert_eq!(Status::parse("Active"), None);
}

/// Issue #52, item 2: both ssh spellings are Playzone URLs; a Playzone on
/// one needs no credentials to be made (its key comes after, from
/// `generate_ssh_key`), takes a deploy key in `credentials`, never a
/// token, and a key stays with its host.
#[test]
fn ssh_urls_take_a_deploy_key_that_stays_with_its_host() {
    for url in ["ssh://git@git.example.org/a.git", "git@github.com:team/app.git"] {
        let mut input = create(url);
        input.private = Some(true);
        let changes = Changes::validate(input, None, &policy()).unwrap_or_else(|e| panic!("{url}: {e:?}"));
        assert_eq!(changes.scm_url.as_deref(), Some(url));
        assert_eq!(changes.credentials, None);
    }
    let pair = crate::ssh_keys::generate_ed25519("t").expect("key");
    let mut keyed = create("git@github.com:team/app.git");
    keyed.credentials = Some(pair.private_openssh.clone());
    let changes = Changes::validate(keyed, None, &policy()).expect("a deploy key");
    assert!(changes.credentials.flatten().is_some_and(|k| k.contains("OPENSSH PRIVATE KEY")));
    let mut token = create("git@github.com:team/app.git");
    token.credentials = Some("glpat-abc".into());
    let errors = Changes::validate(token, None, &policy()).expect_err("a token is no key");
    assert!(messages(&errors, "playzone.credentials")[0].contains("deploy key"), "{errors:?}");
    // Another host drops the stored key; another path keeps it.
    let stored = Stored { private: true, has_token: true, attached: false, scm_url: "git@github.com:team/app.git" };
    let moved = Input { scm_url: Some("ssh://git@evil.example/team/app.git".into()), ..Input::default() };
    assert_eq!(Changes::validate(moved, Some(stored), &policy()).expect("moved").credentials, Some(None));
    let renamed = Input { scm_url: Some("ssh://git@github.com/team/other.git".into()), ..Input::default() };
    assert_eq!(Changes::validate(renamed, Some(stored), &policy()).expect("same host").credentials, None);
}
