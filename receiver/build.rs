//! Builds the receiver's page into the binary: every file under `page/dist`
//! (made by `npm run build` at the repo root) becomes an entry of a table the
//! receiver serves. Without a built page the table is empty and the receiver
//! says how to build it. Owns nothing else.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let dist = root.join("page").join("dist");
    println!("cargo:rerun-if-changed={}", dist.display());
    let mut found = Vec::new();
    files(&dist, &mut found);
    found.sort();
    let mut table = String::from("pub static ASSETS: &[(&str, &[u8])] = &[\n");
    for f in &found {
        println!("cargo:rerun-if-changed={}", f.display());
        let name = f
            .strip_prefix(&dist)
            .expect("under dist")
            .to_string_lossy()
            .replace('\\', "/");
        let _ = writeln!(
            table,
            "    ({name:?}, include_bytes!({:?})),",
            f.display().to_string()
        );
    }
    table.push_str("];\n");
    let out =
        PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("page_assets.rs");
    std::fs::write(out, table).expect("OUT_DIR is writable");
}
