//! Facts every harness shares, read from the folder a session runs in: the
//! repository's `origin` (credentials stripped) and the checked-out branch.
//!
//! Read from `.git` directly (config and HEAD are two small files), never by
//! running git: the daemon must not start processes in a person's repository.

use std::path::{Path, PathBuf};

/// `(repo, branch)` of the repository holding `folder`; a detached HEAD has no
/// branch, a folder outside any repository has neither.
pub fn git(folder: &Path) -> (Option<String>, Option<String>) {
    let Some(git_dir) = git_dir(folder) else {
        return (None, None);
    };
    let common = std::fs::read_to_string(git_dir.join("commondir"))
        .ok()
        .map(|c| git_dir.join(c.trim()))
        .unwrap_or_else(|| git_dir.clone());
    let repo = std::fs::read_to_string(common.join("config"))
        .ok()
        .and_then(|c| origin_url(&c))
        .map(|u| strip_credentials(&u));
    let branch = std::fs::read_to_string(git_dir.join("HEAD"))
        .ok()
        .and_then(|h| {
            h.trim()
                .strip_prefix("ref: refs/heads/")
                .map(str::to_string)
        });
    (repo, branch)
}

/// The `.git` folder for `folder`: walks up to the first `.git` (a folder, or a
/// file saying `gitdir: …` in a worktree or submodule).
fn git_dir(folder: &Path) -> Option<PathBuf> {
    for dir in folder.ancestors() {
        let dot = dir.join(".git");
        if dot.is_dir() {
            return Some(dot);
        }
        if let Ok(text) = std::fs::read_to_string(&dot) {
            let target = text.trim().strip_prefix("gitdir:")?.trim().to_string();
            let p = PathBuf::from(target);
            return Some(if p.is_absolute() { p } else { dir.join(p) });
        }
    }
    None
}

/// `url` of `[remote "origin"]` in a git config file.
fn origin_url(config: &str) -> Option<String> {
    let mut in_origin = false;
    for line in config.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            let section: String = l.chars().filter(|c| !c.is_whitespace()).collect();
            in_origin = section == "[remote\"origin\"]";
        } else if in_origin
            && let Some((key, value)) = l.split_once('=')
            && key.trim() == "url"
        {
            return Some(value.trim().trim_matches('"').to_string());
        }
    }
    None
}

/// A remote URL as it may be shown: its host and path, without the userinfo,
/// query or fragment a credential rides in (`https://user:token@host/x?access_token=t`
/// → `https://host/x`). An scp-like `git@host:x` names an ssh user, not a
/// secret, and stays.
pub fn strip_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let rest = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    let host_end = rest.find('/').unwrap_or(rest.len());
    match rest[..host_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => format!("{scheme}://{rest}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_stripped_and_ssh_users_kept() {
        assert_eq!(
            strip_credentials("https://ann:ghp_x@github.com/a/b.git"),
            "https://github.com/a/b.git"
        );
        assert_eq!(
            strip_credentials("https://token@gitlab.com/a"),
            "https://gitlab.com/a"
        );
        assert_eq!(
            strip_credentials("https://github.com/a@b"),
            "https://github.com/a@b"
        );
        assert_eq!(
            strip_credentials("git@github.com:a/b.git"),
            "git@github.com:a/b.git"
        );
        assert_eq!(strip_credentials("ssh://git@host:22/x"), "ssh://host:22/x");
        assert_eq!(
            strip_credentials("https://github.com/acme/w.git?access_token=ghp_x#frag"),
            "https://github.com/acme/w.git"
        );
        assert_eq!(
            strip_credentials("https://u:p@h.example/a?x=1"),
            "https://h.example/a"
        );
    }

    #[test]
    fn reads_origin_and_branch_from_a_repo_and_a_worktree() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git/worktrees/wt")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        std::fs::write(
            repo.join(".git/config"),
            "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://x/up.git\n[remote \"origin\"]\n\turl = https://ann:secret@github.com/ann/app.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
        )
        .unwrap();
        std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/feature/x\n").unwrap();
        assert_eq!(
            git(&repo.join("src/deep")),
            (
                Some("https://github.com/ann/app.git".into()),
                Some("feature/x".into())
            )
        );
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", repo.join(".git/worktrees/wt").display()),
        )
        .unwrap();
        std::fs::write(repo.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        std::fs::write(
            repo.join(".git/worktrees/wt/HEAD"),
            "4b825dc642cb6eb9a060e54bf8d69288fbee4904\n",
        )
        .unwrap();
        assert_eq!(
            git(&wt),
            (Some("https://github.com/ann/app.git".into()), None),
            "detached: no branch"
        );
        assert_eq!(git(Path::new("/")), (None, None));
    }
}
