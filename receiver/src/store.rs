//! What the receiver keeps: one JSONL file per session (`DIR/<harness>/<id>.jsonl`,
//! one envelope per line, in arrival order), the dedup set rebuilt from those files
//! at start, and the forgotten sessions (`DIR/.forgotten`, one
//! `harness<TAB>id<TAB>seq` per line).
//!
//! This module owns the files and the in-memory index over them. It must not judge
//! events (`check` does) nor speak HTTP. Callers hold it behind one mutex, so a
//! read never sees half of an append.
//!
//! A write is `write_all` on a file opened for append, done before the caller
//! answers 202: a receiver killed right after still has the lines (the kernel holds
//! them), which is what the chaos test needs. No fsync: surviving a power cut is
//! not this receiver's job, and an fsync per batch would cap delivery benchmarks at
//! the disk's flush rate.

use crate::check::Key;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

type SessionKey = (String, String);

pub struct Store {
    dir: PathBuf,
    /// Held so that a receiver started without `--data` cleans up after itself.
    _temp: Option<tempfile::TempDir>,
    /// Stored seqs per (harness, session).
    seqs: HashMap<SessionKey, BTreeSet<u64>>,
    /// Per forgotten session, the seq of its `session.forgotten`: anything at or
    /// below it was deleted and must not come back when a sender retries it.
    forgotten: HashMap<SessionKey, u64>,
}

impl Store {
    /// Opens `data` (created when missing) and rebuilds the index from its files;
    /// without `data`, a fresh temporary folder removed when the store is dropped.
    pub fn open(data: Option<&Path>) -> io::Result<Store> {
        let (dir, temp) = match data {
            Some(d) => {
                fs::create_dir_all(d)?;
                (d.to_path_buf(), None)
            }
            None => {
                let t = tempfile::Builder::new()
                    .prefix("sessionpipe-receiver-")
                    .tempdir()?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        let mut store = Store {
            dir,
            _temp: temp,
            seqs: HashMap::new(),
            forgotten: HashMap::new(),
        };
        store.load()?;
        Ok(store)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn session_file(&self, harness: &str, session: &str) -> PathBuf {
        // Both names were checked against their patterns (no `/`, and a harness
        // never starts with `.`), and the suffix keeps `..` from naming a folder.
        self.dir.join(harness).join(format!("{session}.jsonl"))
    }

    fn load(&mut self) -> io::Result<()> {
        let tombstones = self.dir.join(".forgotten");
        if let Ok(text) = fs::read_to_string(&tombstones) {
            for line in text.lines() {
                let mut f = line.split('\t');
                if let (Some(h), Some(s), Some(Ok(seq))) =
                    (f.next(), f.next(), f.next().map(str::parse::<u64>))
                {
                    let slot = self.forgotten.entry((h.into(), s.into())).or_default();
                    *slot = (*slot).max(seq);
                }
            }
        }
        for harness in fs::read_dir(&self.dir)? {
            let harness = harness?;
            let name = harness.file_name().to_string_lossy().into_owned();
            if !harness.file_type()?.is_dir() || !protocol::valid_harness_name(&name) {
                continue;
            }
            for file in fs::read_dir(harness.path())? {
                let path = file?.path();
                let Some(session) = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".jsonl"))
                    .map(str::to_string)
                else {
                    continue;
                };
                let seqs = read_lines(&path, true)?.into_keys().collect();
                self.seqs.insert((name.clone(), session), seqs);
            }
        }
        Ok(())
    }

    /// True when the key is stored, or was forgotten.
    pub fn is_known(&self, key: &Key) -> bool {
        let sk = (key.0.clone(), key.1.clone());
        self.seqs.get(&sk).is_some_and(|s| s.contains(&key.2))
            || self.forgotten.get(&sk).is_some_and(|f| key.2 <= *f)
    }

    /// Appends one session's new events (`(seq, JSON line)`) in one write.
    pub fn append(
        &mut self,
        harness: &str,
        session: &str,
        lines: &[(u64, String)],
    ) -> io::Result<()> {
        let path = self.session_file(harness, session);
        fs::create_dir_all(path.parent().expect("a session file has a folder"))?;
        let mut text = String::with_capacity(lines.iter().map(|(_, l)| l.len() + 1).sum());
        for (_, l) in lines {
            text.push_str(l);
            text.push('\n');
        }
        let mut f = OpenOptions::new().create(true).append(true).open(&path)?;
        f.write_all(text.as_bytes())?;
        let set = self
            .seqs
            .entry((harness.to_string(), session.to_string()))
            .or_default();
        set.extend(lines.iter().map(|(s, _)| *s));
        Ok(())
    }

    /// Deletes everything stored for the session and remembers that `seq` and
    /// below are gone for good.
    pub fn forget(&mut self, harness: &str, session: &str, seq: u64) -> io::Result<()> {
        let sk = (harness.to_string(), session.to_string());
        // The tombstone is written first: a crash between the two steps must leave
        // the session forgotten, never revived by a retry.
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(".forgotten"))?;
        f.write_all(format!("{harness}\t{session}\t{seq}\n").as_bytes())?;
        let slot = self.forgotten.entry(sk.clone()).or_default();
        *slot = (*slot).max(seq);
        match fs::remove_file(self.session_file(harness, session)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e),
        }
        self.seqs.remove(&sk);
        Ok(())
    }

    /// The session's stored events in seq order, or `None` when nothing is stored.
    pub fn read(&self, harness: &str, session: &str) -> io::Result<Option<Vec<Value>>> {
        let sk = (harness.to_string(), session.to_string());
        if self.seqs.get(&sk).is_none_or(BTreeSet::is_empty) {
            return Ok(None);
        }
        let lines = read_lines(&self.session_file(harness, session), false)?;
        Ok(Some(lines.into_values().collect()))
    }

    /// Every stored (harness, session, seq), sorted.
    pub fn keys(&self) -> Vec<Key> {
        let mut keys: Vec<Key> = self
            .seqs
            .iter()
            .flat_map(|((h, s), seqs)| seqs.iter().map(|q| (h.clone(), s.clone(), *q)))
            .collect();
        keys.sort();
        keys
    }

    /// (sessions with something stored, events stored).
    pub fn counts(&self) -> (usize, usize) {
        let sessions = self.seqs.values().filter(|s| !s.is_empty()).count();
        (sessions, self.seqs.values().map(BTreeSet::len).sum())
    }
}

/// A session file's events by seq, the first line of a seq winning. With `repair`,
/// a last line cut short by a crash (no newline) is cut off the file, so that the
/// next append starts on a line of its own.
fn read_lines(path: &Path, repair: bool) -> io::Result<BTreeMap<u64, Value>> {
    let mut bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e),
    };
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        let keep = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        bytes.truncate(keep);
        if repair {
            File::options()
                .write(true)
                .open(path)?
                .set_len(keep as u64)?;
        }
    }
    let mut out = BTreeMap::new();
    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            eprintln!(
                "sessionpipe-receiver: {}: skipped a line that is not JSON",
                path.display()
            );
            continue;
        };
        if let Some(seq) = v.pointer("/session/seq").and_then(Value::as_u64) {
            out.entry(seq).or_insert(v);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(seq: u64) -> (u64, String) {
        let v = json!({"harness": {"name": "h"}, "session": {"id": "s", "seq": seq}});
        (seq, v.to_string())
    }

    #[test]
    fn appends_survive_a_reopen_and_a_torn_last_line_is_cut() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(Some(dir.path())).unwrap();
        s.append("h", "s", &[line(1), line(0)]).unwrap();
        let file = dir.path().join("h/s.jsonl");
        let mut f = OpenOptions::new().append(true).open(&file).unwrap();
        f.write_all(br#"{"harness":{"name":"h"},"sess"#).unwrap();
        drop(s);

        let mut s = Store::open(Some(dir.path())).unwrap();
        assert!(s.is_known(&("h".into(), "s".into(), 0)));
        assert!(!s.is_known(&("h".into(), "s".into(), 2)));
        s.append("h", "s", &[line(2)]).unwrap();
        let seqs: Vec<u64> = s
            .read("h", "s")
            .unwrap()
            .unwrap()
            .iter()
            .map(|v| v["session"]["seq"].as_u64().unwrap())
            .collect();
        assert_eq!(seqs, [0, 1, 2]);
        assert_eq!(fs::read_to_string(&file).unwrap().lines().count(), 3);
    }

    #[test]
    fn forgetting_deletes_and_stays_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(Some(dir.path())).unwrap();
        s.append("h", "s", &[line(0), line(1)]).unwrap();
        s.forget("h", "s", 2).unwrap();
        assert!(s.read("h", "s").unwrap().is_none());
        assert!(!dir.path().join("h/s.jsonl").exists());
        drop(s);
        let s = Store::open(Some(dir.path())).unwrap();
        assert!(
            s.is_known(&("h".into(), "s".into(), 1)),
            "a retry stays deleted"
        );
        assert!(!s.is_known(&("h".into(), "s".into(), 3)));
        assert_eq!(s.counts(), (0, 0));
    }
}
