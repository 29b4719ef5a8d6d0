//! The check after a change: a command (the project's tests, a type check) run after each
//! change the model makes, its failure appended to the change's result the way the editor's
//! diagnostics are. Where no editor reports diagnostics (the CLI, ACP), this is how a model
//! learns that its change broke something before it says it is done.

use serde_json::Value;

/// `checks.afterEdit`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AfterEdit {
    /// The project's own test command, found from its files (`detect`), where no editor
    /// reports diagnostics.
    #[default]
    Auto,
    Off,
    /// This command, run in the workspace after every change.
    Command(String),
}

impl AfterEdit {
    pub fn parse(value: &Value) -> Result<AfterEdit, String> {
        match value {
            Value::Bool(true) => Ok(AfterEdit::Auto),
            Value::Bool(false) => Ok(AfterEdit::Off),
            Value::String(text) if text == "auto" => Ok(AfterEdit::Auto),
            Value::String(text) if text == "off" => Ok(AfterEdit::Off),
            Value::String(text) if !text.trim().is_empty() => {
                Ok(AfterEdit::Command(text.trim().to_string()))
            }
            _ => Err(format!(
                "must be \"auto\", \"off\" or a command line, got {value}"
            )),
        }
    }
}

/// The test command a project's files call for after a change to `changed` (relative path),
/// given its files (relative paths, the top two levels are enough): pytest for a Python
/// file in a project with pytest-style tests. None: no known check. Only commands that end
/// on their own and need no network are chosen.
pub fn detect(changed: &str, files: &[String]) -> Option<String> {
    if !changed.ends_with(".py") {
        return None;
    }
    let is_test = |path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        name.ends_with(".py")
            && (name.starts_with("test_")
                || name.ends_with("_test.py")
                || path.starts_with("tests/"))
    };
    files
        .iter()
        .any(|path| is_test(path))
        .then(|| "python3 -m pytest -x -q --tb=long -p no:cacheprovider".to_string())
}

/// The test file of `path` (a workspace-relative path) by the naming conventions of its
/// language, the first that `exists`: Python's `NAME_test.py` and `test_NAME.py` beside it or
/// in `tests/`; TypeScript's and JavaScript's `NAME.test.EXT` and `NAME.spec.EXT`; Go's
/// `NAME_test.go`. None for a file that is itself a test.
pub fn tests_of(path: &str, exists: impl Fn(&str) -> bool) -> Option<String> {
    let (dir, name) = match path.rsplit_once('/') {
        Some((dir, name)) => (format!("{dir}/"), name),
        None => (String::new(), path),
    };
    let (stem, ext) = name.rsplit_once('.')?;
    let is_test = stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with(".test")
        || stem.ends_with(".spec");
    if is_test || stem.is_empty() {
        return None;
    }
    let candidates = match ext {
        "py" => vec![
            format!("{dir}{stem}_test.py"),
            format!("{dir}test_{stem}.py"),
            format!("{dir}tests/test_{stem}.py"),
            format!("tests/test_{stem}.py"),
        ],
        "ts" | "tsx" | "js" | "jsx" | "mjs" => vec![
            format!("{dir}{stem}.test.{ext}"),
            format!("{dir}{stem}.spec.{ext}"),
        ],
        "go" => vec![format!("{dir}{stem}_test.go")],
        _ => Vec::new(),
    };
    candidates.into_iter().find(|candidate| exists(candidate))
}

/// Lines of a failing check's output kept (its end: where pytest and compilers summarize;
/// pytest's long traceback of its first failure shows the failing test's code).
pub const KEPT_LINES: usize = 60;

/// Whether a check's run says the change does not work: a non-zero exit (pytest's "no
/// tests were collected" aside), or a run stopped at its time limit. A stopped run is a
/// failure because nothing shows the change works, and after a small change the usual
/// cause is code that loops forever; a slower suite gets a longer `checks.timeoutMs`.
pub fn failed(exit_code: Option<i32>, timed_out: bool, command: &str) -> bool {
    timed_out || (exit_code != Some(0) && !collected_nothing(exit_code, command))
}

/// pytest's "no tests were collected": no verdict on the code.
fn collected_nothing(exit_code: Option<i32>, command: &str) -> bool {
    exit_code == Some(5) && command.contains("pytest")
}

/// What the model reads after a change's result: the check passed, or failed (or was
/// stopped at its time limit `stopped_after`) with the end of its output. None when it says
/// nothing useful (pytest collected no tests).
pub fn report(
    command: &str,
    exit_code: Option<i32>,
    stopped_after: Option<std::time::Duration>,
    output: &str,
) -> Option<String> {
    let why = match (stopped_after, exit_code) {
        (Some(limit), _) => format!(
            "did not finish in {} s and was stopped (code that never returns?)",
            limit.as_secs_f64().round()
        ),
        (None, Some(0)) => return Some(format!("[check after this change: `{command}` passed]")),
        (None, code) if collected_nothing(code, command) => return None,
        (None, code) => format!(
            "failed ({})",
            code.map_or("killed".to_string(), |c| format!("exit {c}"))
        ),
    };
    let lines: Vec<&str> = output.lines().collect();
    let kept = &lines[lines.len().saturating_sub(KEPT_LINES)..];
    Some(format!(
        "[check after this change: `{command}` {why}; the end of its output:]\n{}",
        kept.join("\n")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::Duration;

    #[test]
    fn the_setting_is_auto_off_or_a_command() {
        assert_eq!(AfterEdit::parse(&json!("auto")), Ok(AfterEdit::Auto));
        assert_eq!(AfterEdit::parse(&json!(false)), Ok(AfterEdit::Off));
        assert_eq!(
            AfterEdit::parse(&json!(" make check ")),
            Ok(AfterEdit::Command("make check".into()))
        );
        assert!(AfterEdit::parse(&json!(3)).is_err());
        assert!(AfterEdit::parse(&json!("")).is_err());
    }

    #[test]
    fn pytest_is_found_for_python_changes_in_a_project_with_tests() {
        let files = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let project = files(&["bob.py", "bob_test.py", ".git"]);
        assert!(detect("bob.py", &project).unwrap().contains("pytest"));
        assert_eq!(detect("README.md", &project), None);
        assert_eq!(detect("bob.py", &files(&["bob.py", "setup.py"])), None);
        assert!(detect("a.py", &files(&["a.py", "tests/test_a.py"])).is_some());
    }

    #[test]
    fn a_failure_keeps_the_end_of_the_output() {
        let long: String = (1..=100).map(|n| format!("line {n}\n")).collect();
        let text = report("pytest", Some(1), None, &long).unwrap();
        assert!(text.contains("failed (exit 1)") && text.contains("line 100"));
        assert!(!text.contains("line 40\n"), "{text}");
        assert!(report("pytest", Some(0), None, "")
            .unwrap()
            .contains("passed"));
        assert_eq!(report("python3 -m pytest", Some(5), None, ""), None);
        let stopped = report("x", None, Some(Duration::from_secs(90)), "test_a.py ..").unwrap();
        assert!(
            stopped.contains("did not finish in 90 s") && stopped.ends_with("test_a.py .."),
            "{stopped}"
        );
    }

    #[test]
    fn a_file_s_tests_are_found_by_the_conventions_of_its_language() {
        let files = [
            "bob.py",
            "bob_test.py",
            "src/a.py",
            "src/tests/test_a.py",
            "c.ts",
            "c.spec.ts",
            "tests/test_d.py",
            "d.py",
            "e.go",
            "e_test.go",
            "f.rs",
        ];
        let exists = |p: &str| files.contains(&p);
        assert_eq!(tests_of("bob.py", exists).as_deref(), Some("bob_test.py"));
        assert_eq!(
            tests_of("src/a.py", exists).as_deref(),
            Some("src/tests/test_a.py")
        );
        assert_eq!(tests_of("c.ts", exists).as_deref(), Some("c.spec.ts"));
        assert_eq!(tests_of("d.py", exists).as_deref(), Some("tests/test_d.py"));
        assert_eq!(tests_of("e.go", exists).as_deref(), Some("e_test.go"));
        assert_eq!(tests_of("f.rs", exists), None);
        assert_eq!(tests_of("bob_test.py", exists), None);
        assert_eq!(tests_of("missing.py", exists), None);
    }

    #[test]
    fn a_check_stopped_at_its_time_limit_fails() {
        assert!(failed(None, true, "python3 -m pytest"));
        assert!(failed(Some(1), false, "make check"));
        assert!(!failed(Some(0), false, "make check"));
        assert!(!failed(Some(5), false, "python3 -m pytest"));
    }
}
