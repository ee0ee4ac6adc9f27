//! Compose scalar formats: durations (`1m30s`) and byte sizes (`512m`).

use std::time::Duration;

/// Parses a Compose duration: one or more `<number><unit>` pairs with units
/// `ns`, `us`, `ms`, `s`, `m`, `h` (`1m30s`, `500ms`, `1.5s`), or `0`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let bad = || format!("`{text}` is not a duration (like `10s`, `1m30s` or `500ms`)");
    if text == "0" {
        return Ok(Duration::ZERO);
    }
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let number_len = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(bad)?;
        let number: f64 = rest[..number_len].parse().map_err(|_| bad())?;
        rest = &rest[number_len..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let seconds = match &rest[..unit_len] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(bad()),
        };
        total += number * seconds;
        rest = &rest[unit_len..];
    }
    Duration::try_from_secs_f64(total).map_err(|_| bad())
}

/// Parses a byte size as Docker does: a number with an optional binary
/// suffix `b`, `k`, `m`, `g`, `t` (optionally followed by `b`), any case.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let bad = || format!("`{text}` is not a size (like `512m`, `1g` or `1048576`)");
    let lower = text.trim().to_ascii_lowercase();
    let split = lower.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(lower.len());
    let (number, unit) = lower.split_at(split);
    let number: f64 = number.parse().map_err(|_| bad())?;
    let multiplier: f64 = match unit.trim_start() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let bytes = number * multiplier;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(bytes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let ok = [
            ("10s", Duration::from_secs(10)),
            ("1m30s", Duration::from_secs(90)),
            ("500ms", Duration::from_millis(500)),
            ("1h", Duration::from_secs(3600)),
            ("1.5s", Duration::from_millis(1500)),
            ("2us", Duration::from_micros(2)),
            ("0", Duration::ZERO),
            ("1h2m3s4ms", Duration::from_millis(3_723_004)),
        ];
        for (text, expected) in ok {
            assert_eq!(parse_duration(text), Ok(expected), "{text}");
        }
        for text in ["", "10", "s", "10x", "1m30", "-1s", "1..2s", "10 s", "1e9999s"] {
            assert!(parse_duration(text).is_err(), "{text}");
        }
    }

    #[test]
    fn sizes() {
        let ok = [
            ("1048576", 1_048_576),
            ("512m", 512 * 1024 * 1024),
            ("512M", 512 * 1024 * 1024),
            ("1g", 1024 * 1024 * 1024),
            ("1gb", 1024 * 1024 * 1024),
            ("64k", 65_536),
            ("1.5k", 1536),
            ("10b", 10),
        ];
        for (text, expected) in ok {
            assert_eq!(parse_bytes(text), Ok(expected), "{text}");
        }
        for text in ["", "m", "12q", "-1m", "1..2m"] {
            assert!(parse_bytes(text).is_err(), "{text}");
        }
    }
}
