//! The workspace paths closest to one that does not exist: what a read of a missing path
//! answers with, so a model that guessed a path (`src/main.rs` for `server/src/main.rs`,
//! `utils.py` for `util.py`) sees the real one instead of concluding the file is not there.

/// At most `limit` of `paths` (relative, `/`-separated) closest to `wanted`, best first;
/// none that share nothing with it.
pub fn closest<'a>(wanted: &str, paths: &'a [String], limit: usize) -> Vec<&'a str> {
    let wanted = wanted.trim_start_matches("./").trim_end_matches('/');
    let wanted_name = file_name(wanted).to_lowercase();
    let mut scored: Vec<(usize, &str)> = paths
        .iter()
        .filter_map(|path| score(wanted, &wanted_name, path).map(|s| (s, path.as_str())))
        .collect();
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.len().cmp(&b.1.len()))
            .then(a.1.cmp(b.1))
    });
    scored.into_iter().take(limit).map(|(_, p)| p).collect()
}

/// Higher is closer; None: not worth showing.
fn score(wanted: &str, wanted_name: &str, path: &str) -> Option<usize> {
    let name = file_name(path).to_lowercase();
    // The wanted path is the end of this one (`src/main.rs` of `server/src/main.rs`).
    if path.ends_with(wanted) && path[..path.len() - wanted.len()].ends_with('/') {
        return Some(1000 + wanted.len());
    }
    let shared_dirs = wanted
        .split('/')
        .rev()
        .skip(1)
        .filter(|dir| path.split('/').any(|d| d == *dir))
        .count();
    if name == wanted_name {
        return Some(500 + shared_dirs * 10);
    }
    let distance = edit_distance(&name, wanted_name);
    let longest = name.chars().count().max(wanted_name.chars().count());
    // A close spelling of the name: at most a third of it differs.
    if distance * 3 <= longest && distance > 0 {
        return Some(300 - distance * 10 + shared_dirs * 10);
    }
    let stem = |n: &str| n.split('.').next().unwrap_or("").to_string();
    let (a, b) = (stem(&name), stem(wanted_name));
    if !b.is_empty() && a.len() >= 3 && (a.contains(&b) || b.contains(&a)) {
        return Some(100 + shared_dirs * 10);
    }
    None
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Levenshtein distance over characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let current = row[j + 1];
            row[j + 1] = if ca == *cb {
                previous
            } else {
                1 + previous.min(row[j]).min(row[j + 1])
            };
            previous = current;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(list: &[&str]) -> Vec<String> {
        list.iter().map(|p| p.to_string()).collect()
    }

    #[test]
    fn the_real_path_of_a_guessed_one_comes_first() {
        let all = paths(&[
            "server/src/main.rs",
            "server/src/lib.rs",
            "crates/core/src/lib.rs",
            "README.md",
            "tools/util.py",
            "tools/utilities/x.py",
        ]);
        assert_eq!(closest("src/main.rs", &all, 3), ["server/src/main.rs"]);
        assert_eq!(closest("./src/main.rs", &all, 3), ["server/src/main.rs"]);
        assert_eq!(closest("utils.py", &all, 3)[0], "tools/util.py");
        assert_eq!(
            closest("core/lib.rs", &all, 2),
            ["crates/core/src/lib.rs", "server/src/lib.rs"]
        );
        assert!(closest("nothing_like_it.toml", &all, 3).is_empty());
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
