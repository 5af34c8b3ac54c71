//! The text of the service, per manager: a systemd user unit, a launchd agent's
//! property list, a Task Scheduler task. Pure functions of a `Spec`, so every
//! format is rendered and tested on every OS, whichever one runs it.
//!
//! Each format quotes its own way: systemd words are C-escaped and quoted where
//! they hold blanks or quotes, `%` (a specifier) is doubled, and so is `$` (a
//! variable) in the command's arguments (systemd expands none in the program's
//! path, where a doubled one would stay doubled); the plist and the task are
//! XML, escaped.
//! A `Spec` holds no control character (its constructor refuses them), so no
//! format has to spell a newline.

use std::fmt::Write;

/// The systemd unit's name, and the launchd agent's and the task's.
pub const SYSTEMD_UNIT: &str = "sessionpipe.service";
pub const LAUNCHD_LABEL: &str = "org.sessionpipe.daemon";
pub const TASK_NAME: &str = "sessionpipe";

/// What runs a program whose path systemd will not take as its program.
const ENV_PROGRAM: &str = "/usr/bin/env";

/// What the service runs: a program, its arguments and the environment it adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// The absolute path of the `sessionpipe` binary.
    pub program: String,
    pub args: Vec<String>,
    /// Variables set for the daemon, in order.
    pub env: Vec<(String, String)>,
}

/// A string a service file cannot hold.
#[derive(Debug, thiserror::Error)]
#[error("{what} holds a control character, which a service file cannot carry: {value:?}")]
pub struct Unfit {
    pub what: String,
    pub value: String,
}

impl Spec {
    /// A spec, refusing control characters (a newline in a path or a value).
    pub fn new(
        program: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    ) -> Result<Spec, Unfit> {
        let fit = |what: &str, value: &str| {
            if value.chars().any(char::is_control) {
                Err(Unfit {
                    what: what.to_string(),
                    value: value.to_string(),
                })
            } else {
                Ok(())
            }
        };
        fit("the program's path", &program)?;
        for a in &args {
            fit("an argument", a)?;
        }
        for (k, v) in &env {
            fit(k, v)?;
        }
        Ok(Spec { program, args, env })
    }
}

/// The systemd user unit (`~/.config/systemd/user/sessionpipe.service`).
pub fn systemd_unit(spec: &Spec) -> String {
    // systemd refuses a program path holding a quote or a backslash ("special
    // characters"), and takes any argument: such a path goes to env.
    let mut exec = if spec.program.contains(['\'', '"', '\\']) {
        vec![
            ENV_PROGRAM.to_string(),
            systemd_word(&spec.program, Word::Argument),
        ]
    } else {
        vec![systemd_word(&spec.program, Word::Program)]
    };
    exec.extend(spec.args.iter().map(|a| systemd_word(a, Word::Argument)));
    let mut s = String::new();
    s.push_str(
        "# Written by `sessionpipe service install`; `sessionpipe service uninstall` removes it.\n\
         [Unit]\n\
         Description=sessionpipe daemon (watches coding agents through their hooks)\n\
         # Another daemon holding the lock (the tray app's) makes a start fail:\n\
         # give up after five in two minutes rather than retry for ever.\n\
         StartLimitIntervalSec=120\n\
         StartLimitBurst=5\n\
         \n\
         [Service]\n\
         Type=simple\n",
    );
    let _ = writeln!(s, "ExecStart={}", exec.join(" "));
    for (k, v) in &spec.env {
        let _ = writeln!(
            s,
            "Environment={}",
            systemd_word(&format!("{k}={v}"), Word::Environment)
        );
    }
    s.push_str(
        "Restart=on-failure\n\
         RestartSec=5\n\
         StandardOutput=journal\n\
         StandardError=journal\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n",
    );
    s
}

/// Where a word of a unit goes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Word {
    /// `ExecStart`'s first word: no variable is expanded in it.
    Program,
    /// `ExecStart`'s other words: `$NAME` is expanded there.
    Argument,
    /// `Environment=`'s `KEY=value`, always quoted; nothing expanded.
    Environment,
}

/// One word of a unit's line: `%` doubled (a specifier otherwise), and in an
/// argument `$` too (a variable otherwise); backslashes and quotes escaped,
/// and the word in double quotes when it holds a blank or a quote.
fn systemd_word(word: &str, place: Word) -> String {
    let quote = place == Word::Environment
        || word.is_empty()
        || word
            .chars()
            .any(|c| c.is_whitespace() || matches!(c, '"' | '\'' | ';'));
    let mut out = String::with_capacity(word.len() + 2);
    if quote {
        out.push('"');
    }
    for c in word.chars() {
        match c {
            '%' => out.push_str("%%"),
            '$' if place == Word::Argument => out.push_str("$$"),
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            c => out.push(c),
        }
    }
    if quote {
        out.push('"');
    }
    out
}

/// The launchd agent (`~/Library/LaunchAgents/org.sessionpipe.daemon.plist`):
/// started at login and at load, started again when it exits with a failure,
/// its output in `log` (an absolute path: launchd expands no `~`).
pub fn launchd_plist(spec: &Spec, log: &str) -> String {
    let mut s = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n\
         <!-- Written by `sessionpipe service install`; `sessionpipe service uninstall` removes it. -->\n\
         <plist version=\"1.0\">\n\
         <dict>\n",
    );
    let _ = writeln!(s, "\t<key>Label</key>\n\t<string>{LAUNCHD_LABEL}</string>");
    s.push_str("\t<key>ProgramArguments</key>\n\t<array>\n");
    for word in std::iter::once(&spec.program).chain(&spec.args) {
        let _ = writeln!(s, "\t\t<string>{}</string>", xml(word));
    }
    s.push_str("\t</array>\n");
    if !spec.env.is_empty() {
        s.push_str("\t<key>EnvironmentVariables</key>\n\t<dict>\n");
        for (k, v) in &spec.env {
            let _ = writeln!(
                s,
                "\t\t<key>{}</key>\n\t\t<string>{}</string>",
                xml(k),
                xml(v)
            );
        }
        s.push_str("\t</dict>\n");
    }
    s.push_str(
        "\t<key>RunAtLoad</key>\n\t<true/>\n\
         \t<key>KeepAlive</key>\n\t<dict>\n\t\t<key>SuccessfulExit</key>\n\t\t<false/>\n\t</dict>\n\
         \t<key>ThrottleInterval</key>\n\t<integer>10</integer>\n\
         \t<key>ProcessType</key>\n\t<string>Background</string>\n",
    );
    for key in ["StandardOutPath", "StandardErrorPath"] {
        let _ = writeln!(s, "\t<key>{key}</key>\n\t<string>{}</string>", xml(log));
    }
    s.push_str("</dict>\n</plist>\n");
    s
}

/// The Task Scheduler task (`schtasks /Create /XML`): run at `user`'s logon,
/// with that person's token and no elevation, for as long as it runs, started
/// again (three times, a minute apart) when it fails. A task sets no
/// environment, so a spec with one runs through `cmd.exe /d /s /c`, which sets
/// it first. Declared UTF-16, as the file is written.
pub fn task_xml(spec: &Spec, user: &str) -> String {
    let (command, arguments) = if spec.env.is_empty() {
        (spec.program.clone(), cmd_words(&spec.args))
    } else {
        let mut line = String::new();
        for (k, v) in &spec.env {
            let _ = write!(line, "set \"{k}={v}\"&& ");
        }
        let _ = write!(line, "\"{}\" {}", spec.program, cmd_words(&spec.args));
        ("cmd.exe".to_string(), format!("/d /s /c \"{line}\""))
    };
    let user = xml(user);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-16\"?>\n\
<Task version=\"1.2\" xmlns=\"http://schemas.microsoft.com/windows/2004/02/mit/task\">\n\
  <RegistrationInfo>\n\
    <Description>sessionpipe daemon (watches coding agents through their hooks). Written by `sessionpipe service install`; `sessionpipe service uninstall` removes it.</Description>\n\
    <URI>\\{TASK_NAME}</URI>\n\
  </RegistrationInfo>\n\
  <Triggers>\n\
    <LogonTrigger>\n\
      <Enabled>true</Enabled>\n\
      <UserId>{user}</UserId>\n\
    </LogonTrigger>\n\
  </Triggers>\n\
  <Principals>\n\
    <Principal id=\"Author\">\n\
      <UserId>{user}</UserId>\n\
      <LogonType>InteractiveToken</LogonType>\n\
      <RunLevel>LeastPrivilege</RunLevel>\n\
    </Principal>\n\
  </Principals>\n\
  <Settings>\n\
    <MultipleInstancesPolicy>IgnoreNew</MultipleInstancesPolicy>\n\
    <DisallowStartIfOnBatteries>false</DisallowStartIfOnBatteries>\n\
    <StopIfGoingOnBatteries>false</StopIfGoingOnBatteries>\n\
    <AllowHardTerminate>true</AllowHardTerminate>\n\
    <StartWhenAvailable>false</StartWhenAvailable>\n\
    <RunOnlyIfNetworkAvailable>false</RunOnlyIfNetworkAvailable>\n\
    <AllowStartOnDemand>true</AllowStartOnDemand>\n\
    <Enabled>true</Enabled>\n\
    <Hidden>false</Hidden>\n\
    <RunOnlyIfIdle>false</RunOnlyIfIdle>\n\
    <ExecutionTimeLimit>PT0S</ExecutionTimeLimit>\n\
    <Priority>7</Priority>\n\
    <RestartOnFailure>\n\
      <Interval>PT1M</Interval>\n\
      <Count>3</Count>\n\
    </RestartOnFailure>\n\
  </Settings>\n\
  <Actions Context=\"Author\">\n\
    <Exec>\n\
      <Command>{}</Command>\n\
      <Arguments>{}</Arguments>\n\
    </Exec>\n\
  </Actions>\n\
</Task>\n",
        xml(&command),
        xml(&arguments)
    )
}

/// Arguments on a Windows command line: quoted where they hold a blank.
fn cmd_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if a.is_empty() || a.contains([' ', '\t']) {
                format!("\"{a}\"")
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Text as XML character data or an attribute value.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(program: &str, env: &[(&str, &str)]) -> Spec {
        Spec::new(
            program.into(),
            vec!["daemon".into()],
            env.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
        .unwrap()
    }

    /// What systemd reads back from one quoted or bare word (the unquoting
    /// and unescaping `ExecStart=` and `Environment=` do, for what we write).
    fn systemd_read(word: &str, place: Word) -> String {
        let inner = word
            .strip_prefix('"')
            .and_then(|w| w.strip_suffix('"'))
            .unwrap_or(word);
        let mut out = String::new();
        let mut chars = inner.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => out.push(chars.next().unwrap()),
                '%' => {
                    assert_eq!(chars.next(), Some('%'), "a lone % in {word}");
                    out.push('%');
                }
                '$' if place == Word::Argument => {
                    assert_eq!(chars.next(), Some('$'), "a lone $ in {word}");
                    out.push('$');
                }
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn the_systemd_unit_runs_the_binary_and_restarts_it_on_failure() {
        let unit = systemd_unit(&spec(
            "/usr/bin/sessionpipe",
            &[("SESSIONPIPE_STATE_DIR", "/srv/sp")],
        ));
        assert!(
            unit.contains("\nExecStart=/usr/bin/sessionpipe daemon\n"),
            "{unit}"
        );
        assert!(
            unit.contains("\nEnvironment=\"SESSIONPIPE_STATE_DIR=/srv/sp\"\n"),
            "{unit}"
        );
        for line in [
            "Restart=on-failure",
            "StandardError=journal",
            "WantedBy=default.target",
            "[Service]",
            "[Install]",
        ] {
            assert!(unit.lines().any(|l| l == line), "{line}: {unit}");
        }
    }

    #[test]
    fn systemd_words_with_blanks_quotes_specifiers_and_dollars_read_back_whole() {
        for word in [
            "/home/a b/bin/sessionpipe",
            "/opt/100%/sessionpipe",
            "/opt/$HOME/x",
            "/opt/a\"b\\c/it's",
            "plain",
            "",
        ] {
            for place in [Word::Program, Word::Argument] {
                let written = systemd_word(word, place);
                assert_eq!(systemd_read(&written, place), word, "{written}");
                assert!(
                    !written.contains(' ') || written.starts_with('"'),
                    "a blank outside quotes: {written}"
                );
            }
        }
        assert_eq!(systemd_word("/opt/$x", Word::Program), "/opt/$x");
        let quoted = systemd_unit(&spec("/home/o'neil/a \\b/sessionpipe", &[]));
        assert!(
            quoted
                .contains("\nExecStart=/usr/bin/env \"/home/o'neil/a \\\\b/sessionpipe\" daemon\n"),
            "{quoted}"
        );
        assert_eq!(systemd_word("/opt/$x", Word::Argument), "/opt/$$x");
        let env = systemd_word("PATH=/a b:/100%/$x", Word::Environment);
        assert_eq!(env, "\"PATH=/a b:/100%%/$x\"");
        assert_eq!(systemd_read(&env, Word::Environment), "PATH=/a b:/100%/$x");
    }

    #[test]
    fn the_plist_escapes_xml_and_names_every_argument() {
        let plist = launchd_plist(
            &spec(
                "/Users/a&b/<sp>/sessionpipe",
                &[("PATH", "/usr/bin:/Users/a b/bin")],
            ),
            "/Users/a&b/Library/Logs/sessionpipe.log",
        );
        assert!(
            plist.contains("<string>/Users/a&amp;b/&lt;sp&gt;/sessionpipe</string>\n\t\t<string>daemon</string>"),
            "{plist}"
        );
        assert!(
            plist.contains("<key>PATH</key>\n\t\t<string>/usr/bin:/Users/a b/bin</string>"),
            "{plist}"
        );
        assert!(plist.contains("<string>org.sessionpipe.daemon</string>"));
        assert!(plist.contains("<key>SuccessfulExit</key>\n\t\t<false/>"));
        assert!(!plist.contains("a&b"), "unescaped: {plist}");
    }

    #[test]
    fn the_task_runs_at_logon_and_sets_its_environment_through_cmd() {
        let bare = task_xml(
            &spec(r"C:\Program Files\sessionpipe\sessionpipe.exe", &[]),
            r"HOST\a&b",
        );
        assert!(
            bare.contains(r"<Command>C:\Program Files\sessionpipe\sessionpipe.exe</Command>"),
            "{bare}"
        );
        assert!(bare.contains("<Arguments>daemon</Arguments>"), "{bare}");
        assert!(bare.contains(r"<UserId>HOST\a&amp;b</UserId>"), "{bare}");
        assert!(bare.contains("<LogonTrigger>"));
        let with_env = task_xml(
            &spec(
                r"C:\sp\sessionpipe.exe",
                &[("SESSIONPIPE_STATE_DIR", r"D:\state")],
            ),
            "HOST\\a",
        );
        assert!(
            with_env.contains("<Command>cmd.exe</Command>"),
            "{with_env}"
        );
        assert!(
            with_env.contains(
                r"<Arguments>/d /s /c &quot;set &quot;SESSIONPIPE_STATE_DIR=D:\state&quot;&amp;&amp; &quot;C:\sp\sessionpipe.exe&quot; daemon&quot;</Arguments>"
            ),
            "{with_env}"
        );
    }

    #[test]
    fn a_control_character_is_refused_not_written() {
        let e = Spec::new("/a\nb".into(), vec![], vec![]).unwrap_err();
        assert!(e.to_string().contains("program's path"), "{e}");
        assert!(Spec::new("/a".into(), vec![], vec![("K".into(), "v\r".into())]).is_err());
    }
}
