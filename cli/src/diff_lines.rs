//! A line diff of two texts for `apply`/`diff` output: the server reports
//! a changed Compose file as its old and new text, and a person wants the
//! lines that changed. Longest common subsequence, bounded: texts whose
//! line counts multiply past [`MAX_CELLS`] are shown as all removed, all
//! added.

const MAX_CELLS: usize = 4_000_000;

/// `- line` / `+ line` for each removed / added line, in order; common
/// lines are left out.
pub fn diff(old: &str, new: &str) -> Vec<String> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    if a.len().saturating_mul(b.len()) > MAX_CELLS {
        return a.iter().map(|l| format!("- {l}")).chain(b.iter().map(|l| format!("+ {l}"))).collect();
    }
    // lcs[i][j]: the LCS length of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] { lcs[i + 1][j + 1] + 1 } else { lcs[i + 1][j].max(lcs[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("- {}", a[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changed_lines_are_shown_in_order() {
        let old = "services:\n  web:\n    image: a\n  db:\n    image: pg\n";
        let new = "services:\n  web:\n    image: b\n  db:\n    image: pg\n  cache:\n    image: redis\n";
        assert_eq!(diff(old, new), ["-     image: a", "+     image: b", "+   cache:", "+     image: redis"]);
        assert!(diff(old, old).is_empty());
        assert_eq!(diff("", "x\n"), ["+ x"]);
        assert_eq!(diff("x\n", ""), ["- x"]);
    }
}
