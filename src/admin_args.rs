//! The offline administration commands' arguments (`play accounts`, `play
//! keys`, `play categories`): they act straight on the configured database,
//! no server needed (`crate::admin`).

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum AccountsCommand {
    /// Create an account (with its admin user).
    Create { name: String },
    /// List accounts.
    List,
    /// Switch play's own Git host on or off for an account (with
    /// PLAY_GIT_HOST_ACCOUNTS=selected).
    GitHost {
        name: String,
        #[arg(value_parser = ["on", "off"])]
        state: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Create a key and print its token once (on stdout; details on stderr).
    Create {
        #[arg(long)]
        label: String,
        /// Comma-separated scopes, or `all`.
        #[arg(long)]
        scopes: String,
        /// The account's name.
        #[arg(long, default_value = play_store::accounts::DEFAULT_ACCOUNT)]
        account: String,
        /// An RFC 3339 time, or a duration from now such as `90d`.
        #[arg(long)]
        expires_at: Option<String>,
    },
    /// List keys (without secrets).
    List {
        /// Only this account's keys.
        #[arg(long)]
        account: Option<String>,
    },
    /// Delete a key by id.
    Delete { id: i64 },
}

#[derive(Debug, Subcommand)]
pub enum CategoriesCommand {
    /// List the template categories.
    List,
    /// Add a category (its slug: from the name unless given).
    Add {
        name: String,
        #[arg(long)]
        slug: Option<String>,
    },
    /// Rename a category, named by its id or slug (the slug stays).
    Rename { category: String, name: String },
    /// Remove a category, named by its id or slug; refused while templates
    /// are in it.
    Remove { category: String },
}
