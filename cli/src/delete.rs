//! `delete KIND NAME` and `delete -f`. Playgrounds are destroyed in the
//! background (the API answers 202 `destroying`); `--wait` waits until
//! they are gone, and asks again for a Playroom whose Playgrounds are
//! still being destroyed (a template's delete destroys its trigger's in the
//! background, so `delete -f` of a template and its Playroom meets them).

use std::time::Instant;

use reqwest::Method;

use super::args::DeleteArgs;
use super::client::{Client, is_status};
use super::exit::{self, Coded, NotFound};
use super::kinds::Kind;
use super::{lookup, manifest, wait};

/// The order `delete -f` deletes in: what references others first.
const ORDER: &[Kind] =
    &[Kind::Playground, Kind::WebhookEndpoint, Kind::ImportTemplate, Kind::Playspec, Kind::Playzone, Kind::Playroom];

fn rank(kind: Kind) -> usize {
    ORDER.iter().position(|k| *k == kind).unwrap_or(ORDER.len())
}

/// Deletes one object; `Ok(false)` when the name matched nothing and that
/// is allowed.
async fn delete_one(
    client: &Client,
    kind: Kind,
    name: &str,
    args: &DeleteArgs,
    deadline: Instant,
) -> anyhow::Result<bool> {
    let label = format!("{kind}/{name}");
    if kind.of_template() {
        anyhow::bail!(
            "{kind}s are made by their template's svc.schedule_config or svc.trigger_config: switch it off in a new \
             version, pause it (PATCH /api/{kind}s/ID with paused: true) or delete the template"
        );
    }
    let id = match lookup::resolve(client, kind, name).await {
        Ok(id) => id,
        Err(e) if args.ignore_not_found && e.is::<NotFound>() => {
            println!("{label} not found");
            return Ok(false);
        }
        Err(e) => return Err(e),
    };
    let path = kind.path(id);
    delete_call(client, kind, &path, &label, args, deadline).await?;
    if kind == Kind::Playground {
        if args.wait {
            println!("{label} destroying");
            wait::gone(client, &path, &label, deadline, args.timeout).await?;
            println!("{label} deleted");
        } else {
            println!("{label} destroying (in the background; `play wait {label} --for=delete`)");
        }
    } else {
        println!("{label} deleted");
    }
    Ok(true)
}

/// The DELETE of `path`; with `--wait`, a Playroom refused for its active
/// Playgrounds (`409`) is asked again until they are destroyed or the
/// timeout, which then names the refusal.
async fn delete_call(
    client: &Client,
    kind: Kind,
    path: &str,
    label: &str,
    args: &DeleteArgs,
    deadline: Instant,
) -> anyhow::Result<()> {
    let mut told = false;
    loop {
        match client.call(Method::DELETE, path, None).await {
            Err(e) if args.wait && kind == Kind::Playroom && is_status(&e, 409) => {
                if !told {
                    println!("{label} waiting for its Playgrounds to be destroyed");
                    told = true;
                }
                wait::tick(deadline, args.timeout, || format!("{label} to be free to delete ({e:#})")).await?;
            }
            other => return other.map(|_| ()),
        }
    }
}

pub async fn delete(client: &Client, args: DeleteArgs) -> anyhow::Result<()> {
    let deadline = Instant::now() + args.timeout.0;
    if let (Some(kind), Some(name)) = (args.kind, args.name.as_deref()) {
        delete_one(client, kind, name, &args, deadline).await?;
        return Ok(());
    }
    let docs = manifest::load_checked(&args.files, args.recursive)?;
    for doc in docs.iter().filter(|d| d.kind() == "Repository") {
        println!(
            "repository {} kept: delete -f does not delete repositories (their history would go with them); \
             `play repo delete OWNER/NAME` does",
            doc.name()
        );
    }
    let mut targets: Vec<(Kind, String)> =
        docs.iter().filter_map(|d| Some((Kind::from_manifest(d.kind())?, d.name().to_owned()))).collect();
    targets.sort_by_key(|(kind, _)| rank(*kind));
    let total = targets.len();
    let mut failed = Vec::new();
    for (kind, name) in targets {
        if let Err(e) = delete_one(client, kind, &name, &args, deadline).await {
            eprintln!("play: {kind}/{name}: {e:#}");
            failed.push(exit::code(&e));
        }
    }
    match failed.iter().max() {
        Some(code) => Err(Coded(*code, format!("{} of {total} objects were not deleted", failed.len())).into()),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn referencing_kinds_go_first() {
        assert!(rank(Kind::Playground) < rank(Kind::Playspec));
        assert!(rank(Kind::Playspec) < rank(Kind::Playzone));
        assert!(rank(Kind::Playspec) < rank(Kind::Playroom));
        let in_manifests = super::super::kinds::KINDS.iter().filter(|n| n.kind.in_manifests()).count();
        assert_eq!(ORDER.len(), in_manifests);
    }
}
