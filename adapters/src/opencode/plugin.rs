//! The installer's side of OpenCode: our plugin file,
//! `<config>/opencode/plugins/sessionpipe.js`, which is sessionpipe's whole.
//!
//! OpenCode has no shell hooks; it loads every `.js`/`.ts` file in its plugins
//! folder at start. The file's text is `sessionpipe.js` beside this file
//! (embedded at build time) with the `sessionpipe` program's absolute path
//! written in, for the drain worker it starts when no daemon answers.
//!
//! Owns what is ours there: a file that opens with our first line. Install
//! writes it (current when it is byte for byte the text this build renders,
//! outdated when it is an older one of ours), uninstall removes exactly that
//! file. A file of the same name that is not ours is the person's and is left
//! as it is, with the reason. It must not touch `opencode.json`, another plugin,
//! or the plugins folder beyond creating it.

use harness::install::{ConfigFormat, Ctx, EntryState, Skip};

/// The plugin's source, as it is in the repository.
pub const SOURCE: &str = include_str!("sessionpipe.js");

/// The first line of every plugin sessionpipe wrote: how a file is known as ours.
pub const MARK: &str = "// sessionpipe's plugin for OpenCode.";

/// The line the installer fills in.
const PROGRAM_LINE: &str = "const SESSIONPIPE = null;";

/// The plugin's text for this machine: `sessionpipe` beside the hook binary.
pub fn render(ctx: &Ctx<'_>) -> String {
    let program = ctx
        .hook_bin
        .with_file_name(format!("sessionpipe{}", std::env::consts::EXE_SUFFIX));
    let literal =
        serde_json::to_string(&program.to_string_lossy()).unwrap_or_else(|_| "null".to_string());
    SOURCE.replacen(PROGRAM_LINE, &format!("const SESSIONPIPE = {literal};"), 1)
}

fn ours(text: &str) -> bool {
    text.trim_start_matches('\u{feff}').starts_with(MARK)
}

pub struct PluginFile;

pub static PLUGIN: PluginFile = PluginFile;

impl ConfigFormat for PluginFile {
    fn judge(&self, text: &str, ctx: &Ctx<'_>) -> Result<EntryState, Skip> {
        if text == render(ctx) {
            Ok(EntryState::Current)
        } else if ours(text) {
            Ok(EntryState::Outdated(
                "another version of sessionpipe's plugin".into(),
            ))
        } else {
            Err(not_ours())
        }
    }

    fn add(&self, text: &str, ctx: &Ctx<'_>) -> Result<String, Skip> {
        if text.trim().is_empty() {
            Ok(render(ctx))
        } else {
            Err(not_ours())
        }
    }

    fn remove(&self, text: &str, _original: Option<&str>, _ctx: &Ctx<'_>) -> Result<String, Skip> {
        Ok(if ours(text) {
            String::new()
        } else {
            text.to_string()
        })
    }
}

fn not_ours() -> Skip {
    Skip::Shape("a plugin of that name that sessionpipe did not write: it is kept".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn ctx() -> Ctx<'static> {
        Ctx {
            harness: "opencode",
            hook_bin: Path::new("/opt/sp/bin/sessionpipe-hook"),
        }
    }

    #[test]
    fn the_plugin_names_the_program_beside_the_hook() {
        let text = render(&ctx());
        assert!(text.starts_with(MARK));
        assert!(text.contains("const SESSIONPIPE = \"/opt/sp/bin/sessionpipe\";"));
        assert!(!text.contains(PROGRAM_LINE));
        assert_eq!(SOURCE.matches(PROGRAM_LINE).count(), 1);
    }

    #[test]
    fn ours_is_judged_by_its_text_and_a_strangers_file_is_kept() {
        let c = ctx();
        let text = render(&c);
        assert_eq!(PLUGIN.judge(&text, &c), Ok(EntryState::Current));
        let older = text.replace("wake-stream", "wake-older");
        assert!(matches!(
            PLUGIN.judge(&older, &c),
            Ok(EntryState::Outdated(_))
        ));
        assert_eq!(PLUGIN.remove(&older, None, &c).unwrap(), "");
        let theirs = "export const Mine = async () => ({});\n";
        assert!(matches!(PLUGIN.judge(theirs, &c), Err(Skip::Shape(_))));
        assert_eq!(PLUGIN.remove(theirs, None, &c).unwrap(), theirs);
        assert!(PLUGIN.add(theirs, &c).is_err());
        assert_eq!(PLUGIN.add("", &c).unwrap(), text);
    }
}
