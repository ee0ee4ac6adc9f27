use std::path::PathBuf;

use serde_json::json;

use super::*;

/// A directory of files for one test.
struct Tree(tempfile::TempDir);

impl Tree {
    fn new(files: &[(&str, &[u8])]) -> Tree {
        let dir = tempfile::tempdir().unwrap();
        for (name, content) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        Tree(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn errors(result: anyhow::Result<impl std::fmt::Debug>) -> Vec<String> {
    let err = result.unwrap_err();
    err.downcast_ref::<Problems>().unwrap_or_else(|| panic!("not Problems: {err:#}")).0.clone()
}

const PLAYSPEC: &str = "\
apiVersion: play/v1
kind: Playspec
metadata:
  name: web
spec:
  composeFile: ./compose.yaml
  mounted_files:
    - name: conf
      mount_path: /etc/app.conf
      file: conf/app.conf
    - name: blob
      mount_path: /etc/blob
      file: conf/blob.bin
";

#[test]
fn multi_document_files_resolve_compose_files_and_mounts() {
    let manifest = format!(
        "# the app\n---\n{PLAYSPEC}---\n# nothing here\n---\napiVersion: play/v1\nkind: Playground\nmetadata:\n  name: demo\nspec:\n  playroomRef: box\n  playspecRef: web\n"
    );
    let tree = Tree::new(&[
        ("env/app.yaml", manifest.as_bytes()),
        ("env/compose.yaml", b"services:\n  web:\n    image: nginx\n"),
        ("env/conf/app.conf", b"listen 80;\n"),
        ("env/conf/blob.bin", &[0xff, 0x00, 0xfe]),
    ]);
    let loaded = load(&[tree.path("env/app.yaml")], false, &no_env).unwrap();
    assert_eq!(loaded.len(), 2);
    let (doc, spec) = &loaded[0];
    assert_eq!((doc.source.index, doc.source.first_line), (1, 3));
    assert_eq!(spec["spec"]["base_compose_yaml"], "services:\n  web:\n    image: nginx\n");
    assert!(spec["spec"].get("composeFile").is_none());
    assert_eq!(spec["spec"]["mounted_files"][0]["content"], "listen 80;\n");
    assert!(spec["spec"]["mounted_files"][0].get("file").is_none());
    assert_eq!(spec["spec"]["mounted_files"][1]["content_base64"], "/wD+");
    let (doc, playground) = &loaded[1];
    // The comment-only document between them is not counted.
    assert_eq!(doc.source.index, 2);
    assert_eq!(playground["kind"], "Playground");
}

#[test]
fn value_from_reads_the_environment_and_files_anywhere_in_spec() {
    let manifest = "\
apiVersion: play/v1
kind: Playground
metadata:
  name: demo
spec:
  playroomRef: box
  playspecRef: web
  env_overrides:
    TOKEN:
      valueFrom:
        env: DEMO_TOKEN
    KEY: {valueFrom: {file: secrets/key.txt}}
    PLAIN: inline is fine
  services:
    web:
      env_vars:
        TWO_LINES: {valueFrom: {file: secrets/two.txt}}
";
    let tree = Tree::new(&[
        ("m.yaml", manifest.as_bytes()),
        ("secrets/key.txt", b"s3cret\n"),
        ("secrets/two.txt", b"a\nb\n\n"),
    ]);
    let env = |name: &str| (name == "DEMO_TOKEN").then(|| "from-env".to_owned());
    let loaded = load(&[tree.path("m.yaml")], false, &env).unwrap();
    let spec = &loaded[0].1["spec"];
    assert_eq!(spec["env_overrides"], json!({"TOKEN": "from-env", "KEY": "s3cret", "PLAIN": "inline is fine"}));
    // One trailing newline is removed, not more.
    assert_eq!(spec["services"]["web"]["env_vars"]["TWO_LINES"], "a\nb\n");
}

#[test]
fn unresolvable_references_name_file_document_field_and_line() {
    let manifest = format!(
        "{PLAYSPEC}---\napiVersion: play/v1\nkind: Playzone\nmetadata:\n  name: app\nspec:\n  scm_url: https://git.example.com/a.git\n  credentials:\n    valueFrom:\n      env: UNSET_TOKEN\n"
    );
    let tree = Tree::new(&[("m.yaml", manifest.as_bytes()), ("conf/app.conf", b"x")]);
    let found = errors(load(&[tree.path("m.yaml")], false, &no_env));
    let file = tree.path("m.yaml").display().to_string();
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(found[0].starts_with(&format!("{file}: document 1: spec.composeFile (line 6): cannot read ")), "{found:?}");
    assert!(
        found[1].starts_with(&format!("{file}: document 1: spec.mounted_files[1].file (line 13): cannot read ")),
        "{found:?}"
    );
    assert_eq!(
        found[2],
        format!(
            "{file}: document 2: spec.credentials (line 21): valueFrom: the environment variable UNSET_TOKEN is not set"
        )
    );
}

#[test]
fn compose_file_and_inline_compose_together_are_refused() {
    let manifest = "apiVersion: play/v1\nkind: Playspec\nmetadata:\n  name: web\nspec:\n  base_compose_yaml: 'services: {}'\n  composeFile: c.yaml\n";
    let tree = Tree::new(&[("m.yaml", manifest.as_bytes()), ("c.yaml", b"services: {}\n")]);
    let found = errors(load(&[tree.path("m.yaml")], false, &no_env));
    assert_eq!(found.len(), 1);
    assert!(
        found[0].ends_with("spec.composeFile (line 7): give either composeFile or base_compose_yaml, not both"),
        "{found:?}"
    );
}

#[test]
fn schema_violations_are_caught_before_anything_is_read() {
    let manifest = "\
apiVersion: play/v1
kind: Deployment
metadata:
  name: x
spec: {}
---
apiVersion: play/v1
kind: Playspec
metadata:
  name: Bad_Name
spec:
  composeFile: ./missing.yaml
---
apiVersion: play/v1
kind: Playspec
metadata:
  name: web
spec:
  composeFile: ./missing.yaml
  replicas: 3
";
    let tree = Tree::new(&[("m.yaml", manifest.as_bytes())]);
    let found = errors(load(&[tree.path("m.yaml")], false, &no_env));
    assert_eq!(found.len(), 3, "{found:?}");
    assert!(
        found[0].contains("document 1: kind (line 2): must be one of Playroom, Repository, Playzone, "),
        "{found:?}"
    );
    assert!(found[1].contains("document 2: metadata.name (line 10): must be 1 to 63 lowercase"), "{found:?}");
    assert!(found[2].contains("document 3: spec.replicas (line 20): unknown field"), "{found:?}");
    // Nothing was resolved: the missing compose file is not reported.
    assert!(!found.iter().any(|p| p.contains("missing.yaml")));
}

#[test]
fn the_same_kind_and_name_twice_is_refused_across_files() {
    let doc =
        "apiVersion: play/v1\nkind: Playspec\nmetadata:\n  name: web\nspec:\n  base_compose_yaml: 'services: {}'\n";
    let zone = "apiVersion: play/v1\nkind: Playzone\nmetadata:\n  name: web\nspec:\n  scm_url: https://g/a.git\n";
    let tree = Tree::new(&[("a.yaml", doc.as_bytes()), ("b.yaml", format!("{zone}---\n{doc}").as_bytes())]);
    let found = errors(load(&[tree.path(".")], false, &no_env));
    assert_eq!(found.len(), 1, "{found:?}");
    let first = tree.path("./a.yaml").display().to_string();
    assert!(found[0].contains("b.yaml: document 2: metadata.name (line 11): duplicate Playspec \"web\""), "{found:?}");
    assert!(found[0].ends_with(&format!("already in {first} document 1")), "{found:?}");
}

#[test]
fn directories_skip_non_manifests_and_recurse_only_with_r() {
    let doc = "apiVersion: play/v1\nkind: Playzone\nmetadata:\n  name: app\nspec:\n  scm_url: https://g/a.git\n";
    let tree = Tree::new(&[
        ("dir/app.yaml", doc.as_bytes()),
        ("dir/compose.yaml", b"services:\n  web:\n    image: nginx\n"),
        ("dir/notes.txt", b"apiVersion: nope"),
        ("dir/sub/zone.yml", doc.replace("name: app", "name: sub").as_bytes()),
        ("dir/.hidden/x.yaml", b"apiVersion: broken: ["),
    ]);
    let flat = load(&[tree.path("dir")], false, &no_env).unwrap();
    assert_eq!(flat.iter().map(|(d, _)| d.name().to_owned()).collect::<Vec<_>>(), ["app"]);
    let deep = load(&[tree.path("dir")], true, &no_env).unwrap();
    assert_eq!(deep.iter().map(|(d, _)| d.name().to_owned()).collect::<Vec<_>>(), ["app", "sub"]);
    // Named explicitly, a Compose file is an error, not skipped.
    let found = errors(load(&[tree.path("dir/compose.yaml")], false, &no_env));
    assert!(found[0].ends_with("not a manifest: no document has an apiVersion"), "{found:?}");
}

#[test]
fn yaml_syntax_errors_carry_the_files_line() {
    let text = "apiVersion: play/v1\nkind: Playzone\n---\napiVersion: play/v1\nkind: [unclosed\n";
    let tree = Tree::new(&[("m.yaml", text.as_bytes())]);
    let found = errors(load(&[tree.path("m.yaml")], false, &no_env));
    assert!(found.iter().any(|p| p.contains("document 2 (line") && p.contains("not valid YAML")), "{found:?}");
}

#[test]
fn a_bad_ttl_is_refused() {
    let doc = "apiVersion: play/v1\nkind: Playground\nmetadata:\n  name: d\nspec:\n  playroomRef: box\n  playspecRef: web\n  ttl: soon\n";
    let tree = Tree::new(&[("m.yaml", doc.as_bytes())]);
    let found = errors(load(&[tree.path("m.yaml")], false, &no_env));
    assert!(found[0].contains("spec.ttl (line 8): \"soon\" is not a duration"), "{found:?}");
}

#[test]
fn documents_split_on_separator_lines_only() {
    let docs = split_documents("a: 1\n---\nb: |\n  ---\n  x\n--- # two\nc: 3\n");
    assert_eq!(docs, [("a: 1\n".to_owned(), 1), ("b: |\n  ---\n  x\n".to_owned(), 3), ("c: 3\n".to_owned(), 7)]);
}

#[test]
fn a_repositorys_files_from_come_from_the_folder_next_to_the_manifest() {
    let manifest = "apiVersion: play/v1\nkind: Repository\nmetadata:\n  name: shop\nspec:\n  filesFrom: ./app\n";
    let tree = Tree::new(&[
        ("env/repo.yaml", manifest.as_bytes()),
        ("env/app/compose.yaml", b"services: {}\n"),
        ("env/app/src/main.py", b"print(1)\n"),
        ("env/app/.git/config", b"[core]\n"),
    ]);
    let loaded = load(&[tree.path("env/repo.yaml")], false, &no_env).unwrap();
    let spec = &loaded[0].1["spec"];
    assert!(spec.get("filesFrom").is_none());
    assert_eq!(
        spec["files"],
        json!([{"path": "compose.yaml", "content": "services: {}\n"}, {"path": "src/main.py", "content": "print(1)\n"}]),
        ".git is left out, paths are relative to the folder"
    );

    let both = "apiVersion: play/v1\nkind: Repository\nmetadata:\n  name: shop\nspec:\n  filesFrom: ./app\n  files: [{path: a, content: b}]\n";
    let tree = Tree::new(&[("r.yaml", both.as_bytes()), ("app/a", b"a")]);
    let found = errors(load(&[tree.path("r.yaml")], false, &no_env));
    assert!(found[0].ends_with("spec (line 5): give either files or filesFrom, not both"), "{found:?}");
    let zone = "apiVersion: play/v1\nkind: Playzone\nmetadata:\n  name: z\nspec:\n  scm_url: https://x/y.git\n  repositoryRef: shop\n";
    let tree = Tree::new(&[("z.yaml", zone.as_bytes())]);
    let found = errors(load(&[tree.path("z.yaml")], false, &no_env));
    assert!(found[0].ends_with("needs exactly one of scm_url and repositoryRef"), "{found:?}");
    let missing = "apiVersion: play/v1\nkind: Repository\nmetadata:\n  name: shop\nspec:\n  filesFrom: ./nope\n";
    let tree = Tree::new(&[("r.yaml", missing.as_bytes())]);
    let found = errors(load(&[tree.path("r.yaml")], false, &no_env));
    assert!(found[0].contains("spec.filesFrom") && found[0].contains("is not a folder"), "{found:?}");
}
