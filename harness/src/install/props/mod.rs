//! Property tests of the JSON config editor (`jsonedit` through the
//! Claude-shaped format and the `Installer`), on generated documents: random keys
//! (`"hooks"` among them, some spelled with escapes), nested values, any
//! indentation, CRLF, a byte-order mark, one-line and multi-line containers, and
//! sometimes a comment, a trailing comma, a doubled key (on our path or off it),
//! odd shapes, or entries of ours already there.
//!
//! The invariant: install gives the input's value plus our entries (less any of
//! ours it had), inserting only (every byte of the input is kept, in order, but
//! for the blanks inside an empty container it fills) so that removing ours
//! gives back the input's bytes; or it refuses for a reason the document shows
//! and leaves the file byte-identical. Uninstall after install gives back the
//! input (its bytes, less any entries of ours). 256 cases in a normal run;
//! `PROPTEST_CASES=20000` runs more by hand.

mod docs;
mod model;

use super::scratch::Scratch;
use super::{ConfigFormat, EntryState, FileState, Skip};
use docs::{Case, Twist, case, refusal};
use model::{FORMAT, HARNESS, bin, ctx, kept_in_order, squash, strip, value, with_ours};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{Value, json};

/// One run's cases: `PROPTEST_CASES`, else 256 (proptest's defaults). No
/// regression files are written into the source tree; a failure prints its
/// smallest input.
fn config() -> Config {
    Config {
        failure_persistence: None,
        ..Config::default()
    }
}

/// The format's own calls, as `install` makes them.
fn check_editor(case: &Case) -> Result<(), TestCaseError> {
    let x = case.text.as_str();
    let judged = FORMAT.judge(x, &ctx());
    let cleaned = FORMAT.remove(x, Some(x), &ctx());
    let added = cleaned.clone().and_then(|c| FORMAT.add(&c, &ctx()));
    if x.trim().is_empty() {
        let added = FORMAT
            .add(x, &ctx())
            .expect("a blank file gets our entries");
        prop_assert_eq!(value(&added), with_ours(&json!({})));
        return Ok(());
    }
    if let Some(why) = refusal(case) {
        prop_assert!(added.is_err(), "{why}: must be refused, got {:?}", added);
        let err = added.unwrap_err();
        match why {
            "not plain JSON" => {
                prop_assert!(matches!(err, Skip::NotPlainJson { .. }), "{}", err)
            }
            "duplicate key" => {
                prop_assert!(matches!(err, Skip::DuplicateKey { .. }), "{}", err);
                prop_assert!(judged.is_err(), "status must not judge it");
            }
            _ => prop_assert!(matches!(err, Skip::Shape(_)), "{}", err),
        }
        return Ok(());
    }
    prop_assert!(judged.is_ok(), "{:?}", judged);
    let cleaned = cleaned.expect("removal of ours");
    let installed = added.expect("install");
    let mut want_clean = value(x);
    let original = value(x);
    strip(&mut want_clean, Some(&original));
    prop_assert_eq!(value(&cleaned), want_clean.clone(), "ours taken out");
    prop_assert!(kept_in_order(&cleaned, x), "removal only removes");
    prop_assert_eq!(value(&installed), with_ours(&want_clean), "ours added");
    prop_assert_eq!(FORMAT.judge(&installed, &ctx()), Ok(EntryState::Current));
    prop_assert!(
        kept_in_order(&squash(&cleaned), &installed),
        "install only inserts"
    );
    let bare_lf = |t: &str| t.replace("\r\n", "").contains('\n');
    if cleaned.contains("\r\n") && !bare_lf(&cleaned) {
        prop_assert!(!bare_lf(&installed), "a CRLF file stays CRLF");
    }
    let back = FORMAT
        .remove(&installed, Some(&cleaned), &ctx())
        .expect("remove");
    prop_assert_eq!(
        squash(&back),
        squash(&cleaned),
        "removal undoes the insertion"
    );
    Ok(())
}

fn check_installer(case: &Case) -> Result<(), TestCaseError> {
    let scratch = Scratch::new("settings.json", &case.text, &FORMAT);
    let installer = scratch.installer(bin());
    let hooks = &scratch;
    let read = || scratch.read();
    let state = &scratch.state;
    let x = case.text.as_str();

    let (report, _) = installer.install(HARNESS, hooks).expect("ledger");
    let state_after = &report.files[0].state;
    if refusal(case).is_some() && !x.trim().is_empty() {
        prop_assert!(
            matches!(state_after, FileState::Skipped(_)),
            "{:?}",
            state_after
        );
        prop_assert_eq!(read(), x, "a refused file is byte-identical");
        prop_assert!(!state.join("backups").exists(), "nothing kept");
        let report = installer.uninstall(HARNESS, hooks).expect("ledger");
        match FORMAT.judge(x, &ctx()) {
            // Unreadable as this format: skipped, byte-identical.
            Err(_) => {
                prop_assert!(matches!(report.files[0].state, FileState::Skipped(_)));
                prop_assert_eq!(read(), x);
            }
            // Only install was refused (no room for ours): any of ours still go.
            Ok(_) => {
                let mut want = value(x);
                strip(&mut want, None);
                prop_assert_eq!(value(&read()), want);
            }
        }
        return Ok(());
    }
    let was_current = !x.trim().is_empty() && FORMAT.judge(x, &ctx()) == Ok(EntryState::Current);
    if was_current {
        prop_assert_eq!(state_after, &FileState::Current);
        prop_assert_eq!(read(), x);
    } else {
        prop_assert_eq!(state_after, &FileState::Installed);
        let base = if x.trim().is_empty() {
            x.to_string()
        } else {
            FORMAT.remove(x, Some(x), &ctx()).expect("removal")
        };
        prop_assert_eq!(read(), FORMAT.add(&base, &ctx()).expect("add"));
    }

    let report = installer.uninstall(HARNESS, hooks).expect("ledger");
    prop_assert_eq!(&report.files[0].state, &FileState::Removed);
    let after = read();
    if x.trim().is_empty() {
        prop_assert_eq!(after.as_str(), x);
    } else if was_current {
        // Never written by us: only ours come out, and what they emptied.
        let mut want = value(x);
        strip(&mut want, None);
        prop_assert_eq!(value(&after), want);
    } else {
        // The original's bytes, less any entries of ours it held.
        prop_assert_eq!(&after, &FORMAT.remove(x, Some(x), &ctx()).expect("removal"));
        let mut want = value(x);
        let original = value(x);
        strip(&mut want, Some(&original));
        prop_assert_eq!(value(&after), want);
        prop_assert!(kept_in_order(&after, x), "uninstall only removes");
    }
    if !after.trim().is_empty() {
        prop_assert_eq!(FORMAT.judge(&after, &ctx()), Ok(EntryState::Missing));
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn install_adds_only_ours_or_refuses_and_uninstall_gives_the_input_back(case in case()) {
        // The generator's verdict and the JSON parser's agree on what is plain JSON.
        let plain = serde_json::from_str::<Value>(case.text.trim_start_matches('\u{feff}')).is_ok();
        prop_assert_eq!(
            plain || case.text.trim().is_empty(),
            !matches!(case.twist, Twist::Comment | Twist::TrailingComma),
            "{:?}", case.text
        );
        check_editor(&case)?;
        check_installer(&case)?;
    }
}
