//! What the control benchmarks share: a sandboxed machine (home, state dir,
//! project), the workspace receiver with control, pairing as a person does it
//! (`sessionpipe sink add`, `sessionpipe control pair`, a software passkey's
//! approval), a signer of commands under a day grant, and the report line.
//! Nothing here times anything.

#![allow(dead_code)]

use serde_json::{Value, json};
use sessionpipe_receiver::{ControlOptions, Handle, Options, Receiver};
use sessionpipe_verifier::softkey::{self, DayKey, SoftPasskey};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

pub const TOKEN: &str = "bench-token";

pub struct Env {
    pub hook: PathBuf,
    pub sessionpipe: PathBuf,
    pub home: PathBuf,
    pub state: PathBuf,
    pub project: PathBuf,
}

impl Env {
    pub fn new(dir: &Path, hook: PathBuf, sessionpipe: PathBuf) -> Env {
        let env = Env {
            hook,
            sessionpipe,
            home: dir.join("home"),
            state: dir.join("state"),
            project: dir.join("home/project"),
        };
        std::fs::create_dir_all(&env.project).unwrap();
        env
    }

    pub fn command(&self, program: &Path) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("HOME", &self.home)
            .env("SESSIONPIPE_STATE_DIR", &self.state)
            .env("SESSIONPIPE_SECRETS", "file")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default());
        c
    }
}

/// One client for a benchmark's whole run: a client built per request cost
/// about 7 ms a post on this machine kind, which a sample then counted.
pub fn client() -> reqwest::blocking::Client {
    static CLIENT: std::sync::OnceLock<reqwest::blocking::Client> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::blocking::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap()
        })
        .clone()
}

pub fn post(url: &str, body: &Value) -> Value {
    let r = client()
        .post(url)
        .bearer_auth(TOKEN)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .expect("the receiver answers");
    assert!(r.status().is_success(), "{url}: {}", r.status());
    serde_json::from_str(&r.text().unwrap()).unwrap_or(Value::Null)
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// A machine paired with a fresh workspace receiver: what signs for it.
pub struct Paired {
    pub rx: Handle,
    pub url: String,
    pub machine: String,
    day: DayKey,
    grant: sessionpipe_verifier::Grant,
}

impl Paired {
    /// A command of `kind` for `session`, signed and ready to enqueue.
    pub fn sign(&self, kind: &str, session: &str, fields: Value) -> Value {
        let mut cmd = json!({"v": 1, "t": "sessionpipe.control", "machine": self.machine,
            "kind": kind, "session": session});
        for (k, v) in fields.as_object().cloned().unwrap_or_default() {
            cmd[k] = v;
        }
        cmd["nonce"] = json!(softkey::random_nonce());
        cmd["iat"] = json!(now_ms());
        let signed = softkey::sign_with_grant(&softkey::compact(&cmd), &self.day, &self.grant);
        let mut body = serde_json::to_value(signed).unwrap();
        body["machine"] = json!(self.machine);
        body["expires_in_s"] = json!(600);
        body
    }

    pub fn enqueue_url(&self) -> String {
        format!("{}/test/control/enqueue", self.url)
    }

    /// The receiver's view of this machine's messages.
    pub fn view(&self) -> Value {
        client()
            .get(format!(
                "{}/test/control/messages?machine={}",
                self.url, self.machine
            ))
            .bearer_auth(TOKEN)
            .send()
            .unwrap()
            .json()
            .unwrap()
    }
}

/// Starts a receiver with control, adds it as a sink and pairs the machine
/// with it, allowing `env.project`.
pub fn pair(env: &Env) -> Paired {
    let mut opts = Options::new(TOKEN);
    let mut c = ControlOptions::new("localhost");
    c.max_queue = 10_000;
    opts.control = Some(c);
    let rx = Receiver::start(opts).unwrap();
    let url = rx.url();
    let mut add = env
        .command(&env.sessionpipe)
        .args(["sink", "add", &url, "--token-stdin"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    add.stdin
        .take()
        .unwrap()
        .write_all(format!("{TOKEN}\n").as_bytes())
        .unwrap();
    assert!(add.wait().unwrap().success());
    let mut pair = env
        .command(&env.sessionpipe)
        .args(["control", "pair", &url, "--folder"])
        .arg(&env.project)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(pair.stdout.take().unwrap()).lines();
    let mut machine = String::new();
    let code = loop {
        let line = lines.next().expect("pairing prints").unwrap();
        if let Some(m) = line.strip_prefix("Pairing this machine as ") {
            machine = m.trim_end_matches('.').to_string();
        }
        if let Some(rest) = line.strip_prefix("Open ") {
            let link = rest.split_whitespace().next().unwrap();
            break link.rsplit('/').next().unwrap().to_string();
        }
    };
    let port = rx.addr().port();
    let passkey = SoftPasskey::es256("localhost", &format!("http://localhost:{port}"));
    let proof = softkey::enrollment_proof(&passkey, &machine, &code);
    post(
        &format!("{url}/test/pair/approve"),
        &json!({"code": code, "key": passkey.trusted(), "proof": proof}),
    );
    // The rest of what pairing says, so it never blocks on a full pipe.
    for _ in lines.by_ref() {}
    assert!(pair.wait().unwrap().success(), "pairing failed");
    let day = DayKey::generate();
    let grant = softkey::grant(
        &passkey,
        &day,
        now_ms() - 1000,
        now_ms() + 12 * 3600 * 1000,
        "localhost",
    );
    Paired {
        rx,
        url,
        machine,
        day,
        grant,
    }
}

/// `what: p50 …, p99 …, max … over N samples`.
pub fn report(what: &str, ms: &mut [f64]) {
    report_at(0.99, what, ms);
}

/// `what: p50 …, p<q> …, max … over N samples`.
pub fn report_at(q: f64, what: &str, ms: &mut [f64]) {
    ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{what}: p50 {:.1} ms, p{} {:.1} ms, max {:.1} ms over {} samples",
        at(0.5),
        (q * 100.0).round(),
        at(q),
        ms[ms.len() - 1],
        ms.len()
    );
}

/// The p50 of `ms` (sorted or not).
pub fn p50(ms: &[f64]) -> f64 {
    let mut v = ms.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[(v.len() - 1) / 2]
}

/// An executable `dir/name` that appends the time it ran (ns since the
/// epoch) to `log`, then becomes `program`: how a benchmark sees the moment
/// a program it did not spawn itself starts.
pub fn timing_wrapper(dir: &Path, name: &str, program: &Path, log: &Path) -> PathBuf {
    let p = dir.join(name);
    // A `sh` script: the benchmarks that use it run on Linux.
    sessionpipe_testkit::executable::write_executable(
        &p,
        &format!(
            "#!/bin/sh\ndate +%s%N >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            program.display()
        ),
    );
    p
}

pub fn epoch_ns() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// The time a [`timing_wrapper`] noted on line `count` (from 0), waited for.
pub fn ran_after(log: &Path, count: usize) -> u128 {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() > count {
            return lines[count].trim().parse().unwrap();
        }
        assert!(std::time::Instant::now() < until, "the program never ran");
        std::thread::sleep(Duration::from_millis(1));
    }
}
