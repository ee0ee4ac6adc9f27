//! Latency at a fixed request rate, for `scripts/bench-api` (issue #16:
//! "p99 <= 5 ms at 5k req/s"). `wrk` measures throughput with a closed
//! loop: each connection waits for its answer before asking again, so a
//! slow answer delays the requests behind it and they are never counted
//! as late. This is an open loop: requests start on a fixed schedule, each
//! one's latency is measured from when it was due, not from when it could
//! be sent, so a stall counts against every request it held up.
//!
//!   fixed_rate URL RATE SECONDS [TOKEN]
//!
//! Prints one line: `sent=N errors=E p50_ms=.. p99_ms=.. p999_ms=.. max_ms=..`.

use std::time::{Duration, Instant};

use tokio::sync::mpsc;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: fixed_rate URL RATE SECONDS [TOKEN]";
    let url = args.next().ok_or(usage)?;
    let rate: u32 = args.next().ok_or(usage)?.parse()?;
    let seconds: u32 = args.next().ok_or(usage)?.parse()?;
    let token = args.next();
    if rate == 0 {
        return Err(usage.into());
    }
    let client = reqwest::Client::builder().pool_max_idle_per_host(256).build()?;
    // A first request opens a connection and checks the URL answers.
    let mut warm = client.get(&url);
    if let Some(token) = &token {
        warm = warm.bearer_auth(token);
    }
    warm.send().await?.error_for_status()?;

    let total = u64::from(rate) * u64::from(seconds);
    let interval = Duration::from_secs(1) / rate;
    let (tx, mut rx) = mpsc::unbounded_channel::<Option<Duration>>();
    let start = Instant::now();
    for n in 0..total {
        let due = start + interval * u32::try_from(n)?;
        tokio::time::sleep_until(due.into()).await;
        let mut request = client.get(&url);
        if let Some(token) = &token {
            request = request.bearer_auth(token);
        }
        let tx = tx.clone();
        tokio::spawn(async move {
            let ok = match request.send().await {
                Ok(response) => response.status().is_success() && response.bytes().await.is_ok(),
                Err(_) => false,
            };
            // The receiver outlives every sender.
            let _ = tx.send(ok.then(|| due.elapsed()));
        });
    }
    drop(tx);
    let mut latencies = Vec::with_capacity(usize::try_from(total)?);
    let mut errors = 0u64;
    while let Some(latency) = rx.recv().await {
        match latency {
            Some(l) => latencies.push(l),
            None => errors += 1,
        }
    }
    latencies.sort_unstable();
    let at = |q: f64| {
        let i = ((latencies.len() as f64) * q).ceil() as usize;
        latencies.get(i.saturating_sub(1).min(latencies.len().saturating_sub(1))).map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    println!(
        "sent={total} errors={errors} p50_ms={:.2} p99_ms={:.2} p999_ms={:.2} max_ms={:.2}",
        at(0.50),
        at(0.99),
        at(0.999),
        at(1.0)
    );
    Ok(())
}
