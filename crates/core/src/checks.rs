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

/// Lines of a failing check's output kept (its end: where pytest and compilers summarize;
/// pytest's long traceback of its first failure shows the failing test's code).
pub const KEPT_LINES: usize = 60;

/// What the model reads after a change's result: the check passed, or failed with the end
/// of its output. None when it says nothing useful (pytest collected no tests).
/// Whether a check's run says the code fails: a non-zero exit (pytest's "no tests were
/// collected" aside), not a check that did not finish.
pub fn failed(exit_code: Option<i32>, timed_out: bool, command: &str) -> bool {
    !timed_out && exit_code != Some(0) && !collected_nothing(exit_code, command)
}

/// pytest's "no tests were collected": no verdict on the code.
fn collected_nothing(exit_code: Option<i32>, command: &str) -> bool {
    exit_code == Some(5) && command.contains("pytest")
}

pub fn report(
    command: &str,
    exit_code: Option<i32>,
    timed_out: bool,
    output: &str,
) -> Option<String> {
    if timed_out {
        return Some(format!(
            "[check after this change: `{command}` did not finish in time; run it with shell if you need its result]"
        ));
    }
    match exit_code {
        Some(0) => Some(format!("[check after this change: `{command}` passed]")),
        code if collected_nothing(code, command) => None,
        code => {
            let lines: Vec<&str> = output.lines().collect();
            let kept = &lines[lines.len().saturating_sub(KEPT_LINES)..];
            let code = code.map_or("killed".to_string(), |c| format!("exit {c}"));
            Some(format!(
                "[check after this change: `{command}` failed ({code}); the end of its output:]\n{}",
                kept.join("\n")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let text = report("pytest", Some(1), false, &long).unwrap();
        assert!(text.contains("failed (exit 1)") && text.contains("line 100"));
        assert!(!text.contains("line 40\n"), "{text}");
        assert!(report("pytest", Some(0), false, "")
            .unwrap()
            .contains("passed"));
        assert_eq!(report("python3 -m pytest", Some(5), false, ""), None);
        assert!(report("x", None, true, "")
            .unwrap()
            .contains("did not finish"));
    }
}
