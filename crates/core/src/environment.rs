//! The environment block of a turn: where the agent works and under which rules. It goes in
//! the turn's user message (never in the stable prefix: it carries the date).

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    pub cwd: String,
    /// The session's mode: `ask`, `auto-edit`, `full-auto` or `plan` (`approval::POLICIES`).
    pub approval_policy: String,
    /// The sandbox commands run in: `workspace-write`, `read-only`, or `none` (the sandbox
    /// is off or this machine has none). Said as it is, so the model does not assume one.
    pub sandbox_mode: String,
    /// `enabled` or `restricted` (commands cannot open IP sockets).
    pub network_access: String,
    pub shell: String,
    pub workspace_roots: Vec<String>,
    /// `YYYY-MM-DD`, UTC.
    pub date: String,
    /// The session's background commands still running (id, command line): the model is
    /// reminded of them each turn.
    pub background_commands: Vec<(String, String)>,
}

impl Environment {
    pub fn render(&self) -> String {
        let mut out = String::from("<environment_context>\n");
        out.push_str(&format!("  <cwd>{}</cwd>\n", self.cwd));
        out.push_str(&format!(
            "  <approval_policy>{}</approval_policy>\n",
            self.approval_policy
        ));
        out.push_str(&format!(
            "  <sandbox_mode>{}</sandbox_mode>\n",
            self.sandbox_mode
        ));
        out.push_str(&format!(
            "  <network_access>{}</network_access>\n",
            self.network_access
        ));
        out.push_str(&format!("  <shell>{}</shell>\n", self.shell));
        if !self.workspace_roots.is_empty() {
            out.push_str("  <workspace_roots>\n");
            for root in &self.workspace_roots {
                out.push_str(&format!("    <root>{root}</root>\n"));
            }
            out.push_str("  </workspace_roots>\n");
        }
        out.push_str(&format!("  <current_date>{}</current_date>\n", self.date));
        if !self.background_commands.is_empty() {
            out.push_str("  <background_commands>\n");
            for (id, command) in &self.background_commands {
                out.push_str(&format!(
                    "    <command id=\"{id}\" state=\"running\">{command}</command>\n"
                ));
            }
            out.push_str("  </background_commands>\n");
        }
        out.push_str("</environment_context>");
        out
    }
}

/// `YYYY-MM-DD` of a day counted from 1970-01-01 (Howard Hinnant's civil-from-days).
pub fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(59), "1970-03-01");
        assert_eq!(civil_date(11_016), "2000-02-29");
        assert_eq!(civil_date(20_779), "2026-11-22");
        assert_eq!(civil_date(-1), "1969-12-31");
    }

    #[test]
    fn renders_as_xml() {
        let env = Environment {
            cwd: "/w".into(),
            approval_policy: "ask".into(),
            sandbox_mode: "workspace-write".into(),
            network_access: "restricted".into(),
            shell: "bash".into(),
            workspace_roots: vec!["/w".into(), "/x".into()],
            date: "2026-11-22".into(),
            background_commands: Vec::new(),
        };
        expect_test::expect![[r#"
            <environment_context>
              <cwd>/w</cwd>
              <approval_policy>ask</approval_policy>
              <sandbox_mode>workspace-write</sandbox_mode>
              <network_access>restricted</network_access>
              <shell>bash</shell>
              <workspace_roots>
                <root>/w</root>
                <root>/x</root>
              </workspace_roots>
              <current_date>2026-11-22</current_date>
            </environment_context>"#]]
        .assert_eq(&env.render());
    }

    #[test]
    fn running_background_commands_are_listed() {
        let env = Environment {
            cwd: "/w".into(),
            approval_policy: "ask".into(),
            sandbox_mode: "none".into(),
            network_access: "enabled".into(),
            shell: "sh".into(),
            workspace_roots: Vec::new(),
            date: "2026-11-22".into(),
            background_commands: vec![("bg2".into(), "npm run dev".into())],
        };
        expect_test::expect![[r#"
            <environment_context>
              <cwd>/w</cwd>
              <approval_policy>ask</approval_policy>
              <sandbox_mode>none</sandbox_mode>
              <network_access>enabled</network_access>
              <shell>sh</shell>
              <current_date>2026-11-22</current_date>
              <background_commands>
                <command id="bg2" state="running">npm run dev</command>
              </background_commands>
            </environment_context>"#]]
        .assert_eq(&env.render());
    }
}
