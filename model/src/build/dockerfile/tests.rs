use super::*;

fn images(text: &str) -> Vec<(usize, String, String)> {
    uses(text, &BTreeMap::new())
        .images
        .into_iter()
        .map(|n| (n.line, n.image.registry.clone(), n.image.repository.clone()))
        .collect()
}

#[test]
fn continuations_comments_and_heredocs_are_read_as_the_builder_reads_them() {
    let text = "# syntax=docker/dockerfile:1\nFROM busybox AS base\nRUN <<EOF\nFROM evil/inside-a-heredoc\nEOF\n\
                RUN echo a \\\n  # a comment inside\n  && echo b\nCOPY --from=base /a /b\n";
    let got = instructions(text);
    let keywords: Vec<&str> = got.iter().map(|i| i.keyword.as_str()).collect();
    assert_eq!(keywords, ["FROM", "RUN", "RUN", "COPY"]);
    assert_eq!(got[2].line, 6);
    assert!(got[2].args.contains("echo a") && got[2].args.contains("echo b"), "{:?}", got[2]);
    assert_eq!(images(text), [(2, "docker.io".into(), "library/busybox".into())], "stages and heredocs are no images");
}

#[test]
fn the_escape_directive_changes_the_continuation() {
    let text = "# escape=`\nFROM mcr.microsoft.com/windows `\n  AS build\nCOPY --from=build C:\\a C:\\b\n";
    assert_eq!(images(text), [(2, "mcr.microsoft.com".into(), "windows".into())]);
}

#[test]
fn every_image_a_build_reads_is_found_with_its_arguments_resolved() {
    let text = "ARG BASE=play-build\nARG TAG\nFROM ${BASE}:${TAG:-x} AS one\nFROM one\n\
                COPY --from=127.0.0.1:5000/tools /bin/t /t\nRUN --mount=type=bind,from=index.docker.io/play-build:k,target=/k true\n\
                FROM --platform=linux/amd64 scratch\n";
    let found = uses(text, &BTreeMap::new());
    let written: Vec<&str> = found.images.iter().map(|n| n.written.as_str()).collect();
    assert_eq!(written, ["play-build:x", "127.0.0.1:5000/tools", "index.docker.io/play-build:k"]);
    assert!(found.images.iter().filter(|n| n.image.is_official("play-build")).count() == 2);
    assert_eq!(found.images[1].image.registry_host(), "127.0.0.1");
    // A build argument overrides the default.
    let args = BTreeMap::from([("BASE".to_owned(), "nginx".to_owned())]);
    assert_eq!(uses(text, &args).images[0].written, "nginx:x");
}

#[test]
fn remote_add_sources_are_found() {
    let text = "FROM busybox\nADD http://169.254.169.254/latest/meta-data/ /meta\nADD --chmod=644 local.txt /l\n\
                ADD [\"https://example.com/a.tgz\", \"/a\"]\nADD git@github.com:team/repo.git /src\nCOPY http-not-a-url /x\n";
    let adds: Vec<usize> = uses(text, &BTreeMap::new()).remote_adds.iter().map(|(line, _)| *line).collect();
    assert_eq!(adds, [2, 4, 5]);
}
