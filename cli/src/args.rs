//! The client commands' arguments (`docs/cli.md` is their manual).

use std::path::PathBuf;

use clap::{ArgGroup, Args, Subcommand};

use super::kinds::Kind;
use super::output::{Format, ReportFormat};
use crate::duration::HumanDuration;

/// Options every client command shares.
#[derive(Debug, Clone, Args)]
pub struct ClientOpts {
    /// The context to use (`play config get-contexts`); default: the
    /// current one. `PLAY_URL` and `PLAY_TOKEN` override its URL and token.
    #[arg(long, env = "PLAY_CONTEXT", global = true)]
    pub context: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum ClientCommand {
    /// Check a token against a server and save both as a context.
    Login(LoginArgs),
    /// Show and choose contexts.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Create or update the objects of manifests (POST /api/apply).
    Apply(ApplyArgs),
    /// Show what `apply` would change; exit 1 when anything would.
    Diff(DiffArgs),
    /// List objects of a kind, or show one.
    Get(GetArgs),
    /// Show one object in detail.
    Describe(DescribeArgs),
    /// Delete an object, or the objects of manifests.
    Delete(DeleteArgs),
    /// Print a Playground service's logs.
    Logs(LogsArgs),
    /// Wait until an object reaches a status, or is gone.
    Wait(WaitArgs),
    /// Create a Playspec (and a Playground) from a Compose file.
    Launch(LaunchArgs),
    /// Extend a Playground's lifetime.
    Extend(ExtendArgs),
    /// Put a Playground to sleep now: its containers stop and are kept; a
    /// request to its URL, or `play wake`, wakes it.
    Sleep(PowerArgs),
    /// Wake a sleeping Playground now.
    Wake(PowerArgs),
    /// Repositories on play's own Git host: create, push a folder, clone URL,
    /// attach as a Playzone, delete.
    #[command(subcommand)]
    Repo(RepoCommand),
}

#[derive(Debug, Subcommand)]
pub enum RepoCommand {
    /// Create a repository (private unless `--public`).
    Create(RepoCreateArgs),
    /// Push a folder's files (`.git` and symbolic links left out) as one
    /// commit.
    Push(RepoPushArgs),
    /// Print a repository's clone URL (clone with an API key as the HTTP
    /// password).
    CloneUrl {
        /// `owner/name`.
        repo: String,
    },
    /// Attach a repository as a Playzone, read through the installation
    /// without a token (the account's existing one when attached before).
    Attach {
        /// `owner/name`.
        repo: String,
    },
    /// Delete a repository and its history; Playzones attached to it stop
    /// syncing and say why.
    Delete {
        /// `owner/name`.
        repo: String,
    },
}

#[derive(Debug, Args)]
pub struct RepoCreateArgs {
    /// Lowercase letters, digits, `-`, `_` and `.`.
    pub name: String,
    #[arg(long)]
    pub description: Option<String>,
    /// Anyone may clone it without a key.
    #[arg(long)]
    pub public: bool,
    /// Start with a README commit.
    #[arg(long)]
    pub auto_init: bool,
}

#[derive(Debug, Args)]
pub struct RepoPushArgs {
    /// `owner/name`.
    pub repo: String,
    /// The folder whose files are pushed.
    pub dir: PathBuf,
    /// The commit message.
    #[arg(long, short)]
    pub message: String,
    /// Default: the repository's default branch.
    #[arg(long)]
    pub branch: Option<String>,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("token_source").args(["token", "token_stdin"])))]
pub struct LoginArgs {
    /// The server, e.g. `https://play.example.com` (not with `--web`).
    #[arg(required_unless_present = "web")]
    pub url: Option<String>,
    /// The API token. Prefer `--token-stdin`: a command line is visible to
    /// other users of the machine.
    #[arg(long)]
    pub token: Option<String>,
    /// Read the token from the first line of standard input.
    #[arg(long)]
    pub token_stdin: bool,
    /// Print a one-time link that signs a browser in to the dashboard with
    /// the current context's key (its account and scopes); it works once,
    /// within ten minutes.
    #[arg(long, conflicts_with_all = ["url", "token", "token_stdin"])]
    pub web: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Make a context the current one.
    UseContext { name: String },
    /// List the contexts (never their tokens).
    GetContexts,
    /// Remove a context.
    DeleteContext { name: String },
}

#[derive(Debug, Clone, Args)]
pub struct ManifestArgs {
    /// A manifest file or a directory of them; repeatable.
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR", required = true)]
    pub files: Vec<PathBuf>,
    /// Read the directories' subdirectories too.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Only the documents whose `metadata.labels` hold every `KEY=VALUE`
    /// (comma-separated); the default apply set gets `@KEY=VALUE,...`, so
    /// `--prune` stays within the selection.
    #[arg(short = 'l', long, value_name = "KEY=VALUE,...")]
    pub selector: Option<String>,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    #[command(flatten)]
    pub manifests: ManifestArgs,
    /// Delete the objects an earlier apply of this apply set created that
    /// the manifests no longer hold.
    #[arg(long)]
    pub prune: bool,
    /// Ask the server what would change, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Wait until every applied Playground runs (or, in job mode, completes).
    #[arg(long)]
    pub wait: bool,
    /// How long `--wait` waits.
    #[arg(long, default_value = "10m")]
    pub timeout: HumanDuration,
    /// The apply set; default: derived from the -f paths (docs/manifests.md).
    #[arg(long)]
    pub apply_set: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    #[command(flatten)]
    pub manifests: ManifestArgs,
    /// Show what `apply --prune` would delete too.
    #[arg(long)]
    pub prune: bool,
    #[arg(long)]
    pub apply_set: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// playrooms, playzones, playspecs, playgrounds, templates, webhooks,
    /// schedules, triggers or runs (singular, plural or short: pr, pz,
    /// ps, pg, tpl, wh).
    pub kind: Kind,
    /// A name, a manifest name or an id; without it, all of the kind. A
    /// schedule or trigger is named by its template; `runs` needs one.
    pub name: Option<String>,
    #[arg(short = 'o', long, value_enum, default_value = "table")]
    pub output: Format,
    /// Keep polling (every 2 s) and print what changes, until Ctrl-C.
    #[arg(short = 'w', long)]
    pub watch: bool,
}

#[derive(Debug, Args)]
pub struct DescribeArgs {
    pub kind: Kind,
    pub name: String,
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    #[arg(required_unless_present = "files", conflicts_with = "files")]
    pub kind: Option<Kind>,
    #[arg(required_unless_present = "files")]
    pub name: Option<String>,
    /// Delete the objects these manifests name.
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR")]
    pub files: Vec<PathBuf>,
    #[arg(short = 'R', long, requires = "files")]
    pub recursive: bool,
    /// Wait until deleted Playgrounds are gone (they are destroyed in the
    /// background).
    #[arg(long)]
    pub wait: bool,
    #[arg(long, default_value = "5m")]
    pub timeout: HumanDuration,
    /// A name that matches nothing is not an error.
    #[arg(long)]
    pub ignore_not_found: bool,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The Playground: name, manifest name or id.
    pub playground: String,
    pub service: String,
    /// Keep printing new lines until the Playground ends or Ctrl-C.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Lines from the end, 1-1000.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub tail: u16,
}

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// KIND/NAME, e.g. `playground/demo`.
    pub target: String,
    /// `status=WORD` (e.g. `status=running`) or `delete`.
    #[arg(long = "for", value_name = "CONDITION")]
    pub condition: String,
    #[arg(long, default_value = "5m")]
    pub timeout: HumanDuration,
}

#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// The Compose file.
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub file: PathBuf,
    /// Also start a Playground on this Playroom (name or id).
    #[arg(long)]
    pub playroom: Option<String>,
    /// Name of the Playspec and Playground; default: the Compose file's
    /// directory name.
    #[arg(long)]
    pub name: Option<String>,
    #[arg(long)]
    pub persist_volumes: bool,
    /// Show the Playground's progress until it runs.
    #[arg(long, requires = "playroom")]
    pub wait: bool,
    #[arg(long, default_value = "10m")]
    pub timeout: HumanDuration,
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,
}

#[derive(Debug, Args)]
pub struct ExtendArgs {
    pub playground: String,
    /// Hours to add (1-720); the server's default (8) when not given.
    #[arg(long)]
    pub hours: Option<u16>,
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,
}

#[derive(Debug, Args)]
pub struct PowerArgs {
    /// The Playground (name or id).
    pub playground: String,
    /// Wait until it is `sleeping` (sleep) or `running` (wake).
    #[arg(long)]
    pub wait: bool,
    #[arg(long, default_value = "2m")]
    pub timeout: HumanDuration,
    #[arg(short = 'o', long, value_enum, default_value = "text")]
    pub output: ReportFormat,
}
