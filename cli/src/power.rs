//! `sleep` and `wake` (`POST /api/playgrounds/{id}/sleep` and `/wake`,
//! `docs/sleep.md`): ask a Playground to sleep or wake now, and with
//! `--wait` wait until it is `sleeping` or `running`.

use std::time::Instant;

use play_states::PlaygroundStatus;
use reqwest::Method;
use serde_json::Value;

use super::args::PowerArgs;
use super::client::Client;
use super::kinds::Kind;
use super::output::{self, ReportFormat, cell};
use super::{lookup, wait};

/// Which way: asleep or awake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    Sleep,
    Wake,
}

pub async fn power(client: &Client, args: PowerArgs, way: Way) -> anyhow::Result<()> {
    let id = lookup::resolve(client, Kind::Playground, &args.playground).await?;
    let (action, goal) = match way {
        Way::Sleep => ("sleep", PlaygroundStatus::Sleeping),
        Way::Wake => ("wake", PlaygroundStatus::Running),
    };
    let mut answer = client.call(Method::POST, &format!("/api/playgrounds/{id}/{action}"), None).await?;
    let label = format!("playground/{}", args.playground);
    if args.wait {
        let deadline = Instant::now() + args.timeout.0;
        wait::playground_status_is(client, id, &label, Some(goal), deadline, args.timeout).await?;
        answer = client.get(&format!("/api/playgrounds/{id}")).await?;
    }
    match args.output {
        ReportFormat::Json => println!("{}", output::json(&answer)?),
        ReportFormat::Text => {
            let field = |k: &str| cell(answer.get(k).unwrap_or(&Value::Null));
            println!("{label}: status {}, power {}", field("status"), field("power"));
        }
    }
    Ok(())
}
