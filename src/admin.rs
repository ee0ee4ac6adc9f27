//! Offline administration: accounts and keys, straight against the
//! configured database (no server needed).

use anyhow::{Context, bail};
use play_model::scopes::ScopeSet;
use play_model::time;
use play_store::{accounts, keys, template_categories};

use crate::admin_args::{AccountsCommand, CategoriesCommand, KeysCommand};
use crate::config::Settings;

pub async fn accounts(settings: Settings, command: AccountsCommand) -> anyhow::Result<()> {
    let store = settings.open_store().await?;
    match command {
        AccountsCommand::Create { name } => {
            let (account, _) = accounts::create_account(&store, &name).await.map_err(describe)?;
            println!("{}\t{}", account.id, account.name);
        }
        AccountsCommand::GitHost { name, state } => {
            let account = accounts::set_git_host(&store, &name, state == "on").await.map_err(|e| match e {
                play_core::Error::NotFound(_) => anyhow::anyhow!("no account named {name:?}"),
                other => describe(other),
            })?;
            println!("{}\t{}\tgit-host {state}", account.id, account.name);
        }
        AccountsCommand::List => {
            for account in accounts::list_accounts(&store).await? {
                println!("{}\t{}\t{}", account.id, account.name, time::to_db(&account.created_at));
            }
        }
    }
    store.close().await;
    Ok(())
}

pub async fn categories(settings: Settings, command: CategoriesCommand) -> anyhow::Result<()> {
    let store = settings.open_store().await?;
    let found = async |key: &str| {
        template_categories::find(&store, key).await.map_err(|e| match e {
            play_core::Error::NotFound(_) => anyhow::anyhow!("no category with the id or slug {key:?}"),
            other => describe(other),
        })
    };
    match command {
        CategoriesCommand::List => {
            for c in play_store::templates::categories(&store).await? {
                println!("{}\t{}\t{}", c.id, c.slug, c.name);
            }
        }
        CategoriesCommand::Add { name, slug } => {
            let slug = slug.unwrap_or_else(|| template_categories::slug_of(&name));
            let c = template_categories::add(&store, &name, &slug).await.map_err(describe)?;
            println!("{}\t{}\t{}", c.id, c.slug, c.name);
        }
        CategoriesCommand::Rename { category, name } => {
            let c = found(&category).await?;
            let c = template_categories::rename(&store, c.id, &name).await.map_err(describe)?;
            println!("{}\t{}\t{}", c.id, c.slug, c.name);
        }
        CategoriesCommand::Remove { category } => {
            let c = found(&category).await?;
            template_categories::remove(&store, c.id).await.map_err(describe)?;
            println!("{}\t{}\tremoved", c.id, c.slug);
        }
    }
    store.close().await;
    Ok(())
}

pub async fn keys(settings: Settings, command: KeysCommand) -> anyhow::Result<()> {
    let store = settings.open_store().await?;
    match command {
        KeysCommand::Create { label, scopes, account, expires_at } => {
            let scopes = ScopeSet::parse_list(&scopes).map_err(|unknown| {
                let names: Vec<_> = unknown.iter().map(|u| u.0.as_str()).collect();
                anyhow::anyhow!("unknown scopes: {} (known: {})", names.join(", "), known_scopes())
            })?;
            if scopes.is_empty() {
                bail!("--scopes names no scope (known: all, {})", known_scopes());
            }
            if label.trim().is_empty() {
                bail!("--label must not be empty");
            }
            let expires_at = expires_at.as_deref().map(|text| time::parse_expiry(text, time::now()));
            let expires_at = expires_at.transpose().map_err(|e| anyhow::anyhow!("--expires-at {e}"))?;
            let account = accounts::find_account_by_name(&store, &account)
                .await
                .with_context(|| format!("no account named {account:?} (play accounts create NAME)"))?;
            let pepper = play_core::master_key::checked(&store, &settings.master_key_file).await?.token_pepper();
            let label = label.trim().to_owned();
            let (key, token) = play_core::admin_keys::create_key(&store, &pepper, &account, label, scopes, expires_at)
                .await
                .map_err(describe)?;
            eprintln!(
                "created key {} ({}) in account {}; the token is shown once:",
                key.id, key.client_id, account.name
            );
            println!("{token}");
        }
        KeysCommand::List { account } => {
            let listed = match account {
                Some(name) => keys::list(&store, accounts::find_account_by_name(&store, &name).await?.id).await?,
                None => keys::list_all(&store).await?,
            };
            for key in listed {
                println!(
                    "{}\t{}\t{}\t{}\texpires={}",
                    key.id,
                    key.client_id,
                    key.label,
                    key.scopes.to_db().replace(' ', ","),
                    key.expires_at.as_ref().map(time::to_db).unwrap_or_else(|| "never".into())
                );
            }
        }
        KeysCommand::Delete { id } => {
            keys::delete_any(&store, id).await.map_err(describe)?;
            eprintln!("deleted key {id}");
        }
    }
    store.close().await;
    Ok(())
}

fn known_scopes() -> String {
    play_model::scopes::Scope::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
}

fn describe(error: play_core::Error) -> anyhow::Error {
    match error {
        play_core::Error::Validation(fields) => anyhow::anyhow!("{}", play_model::error::in_one_line(&fields)),
        other => other.into(),
    }
}
