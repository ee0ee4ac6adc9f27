//! The fuzzy scorer of template search.
//!
//! A query and a text are split into lowercase words (letters and digits).
//! Each query word is matched against every word of the name and of the
//! description and keeps its best similarity:
//! - equal: 1.0; the text word starts with the query word (a partial word):
//!   0.95; contains it (query word of 3+ characters): 0.85;
//! - otherwise the best of the normalised Damerau-Levenshtein similarity to
//!   the whole word and to the word's prefix of the query word's length
//!   (a typo inside a partial word), and Jaro-Winkler, each scaled by 0.9 so
//!   that an exact or partial match always outranks a typo; below
//!   [`MIN_WORD_SIMILARITY`] a word does not match at all.
//!
//! A name match weighs twice a description match. The score is the mean over
//! query words of `max(2 * name, description) / 2`, plus up to
//! [`COVERAGE_BONUS`] for the share of the name's words the query matched (so
//! "postgress" ranks "PostgreSQL" above "Postgres Exporter": the whole name
//! is what was asked for). A template is a result when at least one query
//! word matched.

use strsim::{jaro_winkler, normalized_damerau_levenshtein};

/// The most results a search returns (the spec's limit).
pub const MAX_RESULTS: usize = 10;

/// Below this a query word and a text word are unrelated.
const MIN_WORD_SIMILARITY: f64 = 0.72;

/// The most the share of matched name words adds to a score.
const COVERAGE_BONUS: f64 = 0.1;

/// Query words shorter than this match only as exact words or prefixes:
/// typo tolerance on one or two letters matches everything.
const MIN_FUZZY_LEN: usize = 3;

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

fn word_similarity(query: &str, word: &str) -> f64 {
    if query == word {
        return 1.0;
    }
    if word.starts_with(query) {
        return 0.95;
    }
    let query_len = query.chars().count();
    if query_len < MIN_FUZZY_LEN {
        return 0.0;
    }
    if word.contains(query) {
        return 0.85;
    }
    let whole = normalized_damerau_levenshtein(query, word);
    let prefix: String = word.chars().take(query_len).collect();
    let partial =
        if prefix.chars().count() == query_len { normalized_damerau_levenshtein(query, &prefix) } else { 0.0 };
    let best = whole.max(partial).max(jaro_winkler(query, word)) * 0.9;
    if best >= MIN_WORD_SIMILARITY { best } else { 0.0 }
}

fn best(query: &str, text: &[String]) -> f64 {
    text.iter().map(|w| word_similarity(query, w)).fold(0.0, f64::max)
}

/// The relevance of a template to `query`, or `None` when nothing matched.
pub fn score(query: &str, name: &str, description: &str) -> Option<f64> {
    let query = words(query);
    if query.is_empty() {
        return None;
    }
    let (name, description) = (words(name), words(description));
    let per_word: Vec<f64> = query.iter().map(|q| (2.0 * best(q, &name)).max(best(q, &description)) / 2.0).collect();
    let total = per_word.iter().sum::<f64>() / per_word.len() as f64;
    if total <= 0.0 {
        return None;
    }
    let covered = name.iter().filter(|w| query.iter().any(|q| word_similarity(q, w) > 0.0)).count();
    let coverage = if name.is_empty() { 0.0 } else { covered as f64 / name.len() as f64 };
    Some(total + COVERAGE_BONUS * coverage)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rank<'a>(query: &str, items: &[(&'a str, &'a str)]) -> Vec<&'a str> {
        let mut scored: Vec<(f64, &str)> =
            items.iter().filter_map(|(n, d)| score(query, n, d).map(|s| (s, *n))).collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored.into_iter().map(|(_, n)| n).collect()
    }

    const CATALOG: &[(&str, &str)] = &[
        ("PostgreSQL", "Relational database with a persistent volume"),
        ("Grafana", "Dashboards for Prometheus and PostgreSQL"),
        ("MySQL", "Relational database"),
        ("Redis", "In-memory cache"),
        ("WordPress", "Blog with MySQL"),
        ("Mongo Express", "Web admin for MongoDB"),
        ("Postgres Exporter", "Prometheus metrics"),
    ];

    #[test]
    fn typos_rank_the_intended_name_first() {
        assert_eq!(rank("postgress", CATALOG), ["PostgreSQL", "Postgres Exporter", "Grafana"]);
        assert_eq!(rank("postgres exporter", CATALOG)[0], "Postgres Exporter");
        assert_eq!(rank("grafna", CATALOG)[0], "Grafana");
        assert_eq!(rank("wrodpress", CATALOG)[0], "WordPress");
    }

    #[test]
    fn partial_words_match_prefixes_and_inner_parts() {
        assert_eq!(rank("graf", CATALOG)[0], "Grafana");
        assert_eq!(rank("mongo", CATALOG)[0], "Mongo Express");
        assert_eq!(rank("press", CATALOG)[0], "WordPress");
    }

    #[test]
    fn name_matches_outrank_description_matches() {
        assert_eq!(rank("mysql", CATALOG), ["MySQL", "WordPress"]);
    }

    #[test]
    fn unrelated_and_empty_queries_match_nothing() {
        assert!(rank("kubernetes", CATALOG).is_empty());
        assert!(score("  -- ", "PostgreSQL", "").is_none());
        assert!(rank("zq", CATALOG).is_empty());
    }
}
