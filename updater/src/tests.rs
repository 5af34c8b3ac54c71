//! The updater end to end, against a real loopback HTTP server and a
//! throwaway key: what is found, downloaded, checked and swapped in, and
//! each refusal leaving the installed bundle byte for byte as it was.

use super::*;
use ed25519_dalek::SigningKey;
use serde_json::json;
use sessionpipe_testkit::http::{HttpServer, Response};
use sha2::Digest;
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Instant, UNIX_EPOCH};

const PLATFORM: &str = "darwin-aarch64";
const EXE: &str = "Contents/MacOS/sessionpipe-app";
const ARTIFACT: &str = "/download/sessionpipe_0.2.0_aarch64.app.tar.gz";

fn throwaway_key() -> SigningKey {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    SigningKey::from_bytes(&seed)
}

fn now() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_800_000_000)
}

enum Route {
    Serve(Response),
    /// Answers nothing until the test ends.
    Hang,
}

/// A release server: the test's routes on a real loopback HTTP server.
struct Release {
    routes: Arc<Mutex<HashMap<String, Route>>>,
    /// Held by the test; dropped, the hanging handlers return.
    _release_hangs: mpsc::Sender<()>,
    server: HttpServer,
    key: SigningKey,
}

impl Release {
    fn start() -> Release {
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let (release_hangs, hang) = mpsc::channel::<()>();
        let hang = Mutex::new(hang);
        let served = routes.clone();
        let server = HttpServer::start(move |request| {
            let route = served.lock().unwrap().get(request.path()).map(|r| match r {
                Route::Serve(response) => Some(response.clone()),
                Route::Hang => None,
            });
            match route {
                Some(Some(response)) => response,
                Some(None) => {
                    let _ = hang.lock().unwrap().recv_timeout(Duration::from_secs(60));
                    Response::new(200, "text/plain", "too late")
                }
                None => Response::new(404, "text/plain", "not found"),
            }
        })
        .unwrap();
        Release {
            routes,
            _release_hangs: release_hangs,
            server,
            key: throwaway_key(),
        }
    }

    fn route(&self, path: &str, route: Route) {
        self.routes.lock().unwrap().insert(path.into(), route);
    }

    fn serve(&self, path: &str, body: &[u8]) {
        self.route(
            path,
            Route::Serve(Response::new(200, "application/octet-stream", body)),
        );
    }

    /// `latest.json` as given, signed with `key`.
    fn publish_signed_by(&self, manifest: &serde_json::Value, key: &SigningKey) {
        let bytes = serde_json::to_vec_pretty(manifest).unwrap();
        self.serve("/latest.json", &bytes);
        self.serve("/latest.json.sig", manifest::sign(&bytes, key).as_bytes());
    }

    fn publish(&self, manifest: &serde_json::Value) {
        self.publish_signed_by(manifest, &self.key);
    }

    /// A manifest of `version` whose `platform` artifact is `artifact`, at `url`.
    fn manifest(
        &self,
        version: &str,
        platform: &str,
        artifact: &[u8],
        url: &str,
    ) -> serde_json::Value {
        json!({
            "version": version,
            "notes": "Faster, and fewer bugs.",
            "published": "2026-05-01T12:00:00Z",
            "artifacts": {platform: {
                "url": url,
                "sha256": hex::encode(sha2::Sha256::digest(artifact)),
                "size": artifact.len(),
            }},
        })
    }

    fn artifact_url(&self) -> String {
        format!("{}{ARTIFACT}", self.server.base_url())
    }

    fn paths(&self) -> Vec<String> {
        self.server
            .requests()
            .iter()
            .map(|r| r.path().to_string())
            .collect()
    }
}

/// An installed app: a fake bundle in a folder of its own.
struct App {
    dir: tempfile::TempDir,
    bundle: PathBuf,
    state: tempfile::TempDir,
}

impl App {
    fn installed() -> App {
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("sessionpipe.app");
        write_file(&bundle.join(EXE), b"#!/bin/sh\necho 0.1.0\n", 0o755);
        write_file(
            &bundle.join("Contents/Info.plist"),
            b"<plist>0.1.0</plist>",
            0o644,
        );
        write_file(
            &bundle.join("Contents/Resources/only-in-0.1.0"),
            b"old",
            0o644,
        );
        App {
            dir,
            bundle,
            state: tempfile::tempdir().unwrap(),
        }
    }

    fn updater(&self, release: &Release, running: &str) -> Updater {
        let mut config = Config::new(
            running.parse().unwrap(),
            format!("{}/latest.json", release.server.base_url()),
            self.state.path(),
            Installation::Bundle {
                bundle: self.bundle.clone(),
                exe_in_bundle: EXE.into(),
                platform: PLATFORM.into(),
            },
        );
        config.public_key = release.key.verifying_key().to_bytes();
        config.stall = Duration::from_millis(500);
        config.deadline = Duration::from_secs(20);
        Updater::new(config).unwrap()
    }

    /// Every file and folder beside and in the bundle: its bytes and mode.
    fn snapshot(&self) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
        let mut all = BTreeMap::new();
        walk(self.dir.path(), self.dir.path(), &mut all);
        all
    }
}

fn write_file(path: &Path, bytes: &[u8], mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn walk(root: &Path, dir: &Path, all: &mut BTreeMap<PathBuf, (Vec<u8>, u32)>) {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode();
        let rel = path.strip_prefix(root).unwrap().to_path_buf();
        if meta.is_dir() {
            all.insert(rel, (Vec::new(), mode));
            walk(root, &path, all);
        } else {
            all.insert(rel, (std::fs::read(&path).unwrap(), mode));
        }
    }
}

/// The 0.2.0 bundle as `tar -czf x.app.tar.gz sessionpipe.app` makes it.
fn bundle_tar_gz() -> Vec<u8> {
    let gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    let mut tar = tar::Builder::new(gz);
    let mut add = |path: &str, bytes: &[u8], mode: u32| {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(mode);
        header.set_cksum();
        tar.append_data(&mut header, path, bytes).unwrap();
    };
    add(
        &format!("sessionpipe.app/{EXE}"),
        b"#!/bin/sh\necho 0.2.0\n",
        0o755,
    );
    add(
        "sessionpipe.app/Contents/Info.plist",
        b"<plist>0.2.0</plist>",
        0o644,
    );
    add(
        "sessionpipe.app/Contents/Resources/new-in-0.2.0",
        b"new",
        0o644,
    );
    tar.into_inner().unwrap().finish().unwrap()
}

fn available(check: Check) -> Update {
    match check {
        Check::Available(update) => update,
        other => panic!("no update offered: {other:?}"),
    }
}

/// A release whose `version` for `platform` is published and its archive
/// served: what most tests start from.
fn released(version: &str, platform: &str) -> (Release, Vec<u8>) {
    let release = Release::start();
    let archive = bundle_tar_gz();
    release.serve(ARTIFACT, &archive);
    release.publish(&release.manifest(version, platform, &archive, &release.artifact_url()));
    (release, archive)
}

/// The bundle is not touched and nothing was left beside it.
fn assert_untouched(app: &App, before: &BTreeMap<PathBuf, (Vec<u8>, u32)>) {
    assert_eq!(&app.snapshot(), before, "the installed bundle changed");
}

#[test]
fn a_newer_signed_version_is_found_downloaded_checked_and_swapped_in() {
    let (release, _) = released("0.2.0", PLATFORM);
    let app = App::installed();
    let updater = app.updater(&release, "0.1.0");

    let update = available(updater.check_now(now()).unwrap());
    assert_eq!(update.version(), &Version::new(0, 2, 0));
    assert_eq!(update.notes(), "Faster, and fewer bugs.");
    let installed = updater.install(&update).unwrap();
    assert_eq!(
        installed,
        Installed::Bundle {
            bundle: app.bundle.clone()
        }
    );

    let after = app.snapshot();
    let file = |p: &str| after.get(Path::new(p)).cloned();
    assert_eq!(
        file("sessionpipe.app/Contents/MacOS/sessionpipe-app"),
        Some((b"#!/bin/sh\necho 0.2.0\n".to_vec(), 0o100755)),
        "the new executable, still executable"
    );
    assert_eq!(
        file("sessionpipe.app/Contents/Info.plist").map(|f| f.0),
        Some(b"<plist>0.2.0</plist>".to_vec())
    );
    assert!(file("sessionpipe.app/Contents/Resources/new-in-0.2.0").is_some());
    assert!(
        file("sessionpipe.app/Contents/Resources/only-in-0.1.0").is_none(),
        "the old bundle is gone, not merged"
    );
    assert!(
        after.keys().all(|p| p.starts_with("sessionpipe.app")),
        "no staging left beside the bundle: {:?}",
        after.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        release.paths(),
        ["/latest.json", "/latest.json.sig", ARTIFACT]
    );
}

#[test]
fn a_bad_signature_is_refused_and_nothing_is_downloaded() {
    let release = Release::start();
    let archive = bundle_tar_gz();
    release.serve(ARTIFACT, &archive);
    let manifest = release.manifest("0.2.0", PLATFORM, &archive, &release.artifact_url());
    release.publish_signed_by(&manifest, &throwaway_key());
    let app = App::installed();
    let before = app.snapshot();

    let err = app.updater(&release, "0.1.0").check_now(now()).unwrap_err();
    assert!(
        matches!(err, Error::Manifest(ManifestError::BadSignature)),
        "{err}"
    );
    assert_eq!(release.paths(), ["/latest.json", "/latest.json.sig"]);
    assert_untouched(&app, &before);
}

#[test]
fn a_tampered_artifact_is_refused_and_the_bundle_stays_as_it_was() {
    let release = Release::start();
    let archive = bundle_tar_gz();
    release.publish(&release.manifest("0.2.0", PLATFORM, &archive, &release.artifact_url()));
    // Same size, one byte changed: only the digest can tell.
    let mut tampered = archive.clone();
    let last = tampered.len() - 10;
    tampered[last] ^= 0xff;
    release.serve(ARTIFACT, &tampered);
    let app = App::installed();
    let before = app.snapshot();
    let updater = app.updater(&release, "0.1.0");

    let update = available(updater.check_now(now()).unwrap());
    let err = updater.install(&update).unwrap_err();
    assert!(
        matches!(err, Error::Fetch(FetchError::Digest { .. })),
        "{err}"
    );
    assert_untouched(&app, &before);
}

#[test]
fn a_truncated_download_is_refused_and_the_bundle_stays_as_it_was() {
    let release = Release::start();
    let archive = bundle_tar_gz();
    let app = App::installed();
    let before = app.snapshot();

    // A server that says the whole length, sends half, and hangs up.
    let cut = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let cut_url = format!("http://{}{ARTIFACT}", cut.local_addr().unwrap());
    let half = archive[..archive.len() / 2].to_vec();
    let length = archive.len();
    let cutter = std::thread::spawn(move || {
        let (mut stream, _) = cut.accept().unwrap();
        let mut request = Vec::new();
        let mut byte = [0u8; 1];
        while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
            request.push(byte[0]);
        }
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n"
        )
        .unwrap();
        stream.write_all(&half).unwrap();
    });
    release.publish(&release.manifest("0.2.0", PLATFORM, &archive, &cut_url));
    let updater = app.updater(&release, "0.1.0");
    let update = available(updater.check_now(now()).unwrap());
    let err = updater.install(&update).unwrap_err();
    assert!(
        matches!(err, Error::Fetch(FetchError::Read { .. })),
        "{err}"
    );
    cutter.join().unwrap();
    assert_untouched(&app, &before);

    // A short file served whole: its length is not the manifest's.
    release.serve(ARTIFACT, &archive[..archive.len() - 1]);
    release.publish(&release.manifest("0.2.0", PLATFORM, &archive, &release.artifact_url()));
    let update = available(updater.check_now(now()).unwrap());
    let err = updater.install(&update).unwrap_err();
    assert!(
        matches!(err, Error::Fetch(FetchError::Size { expected, got, .. })
            if expected == length as u64 && got == length as u64 - 1),
        "{err}"
    );
    assert_untouched(&app, &before);
}

#[test]
fn the_same_or_an_older_version_is_never_offered() {
    let release = Release::start();
    let archive = bundle_tar_gz();
    release.serve(ARTIFACT, &archive);
    let app = App::installed();
    let before = app.snapshot();
    for (offered, running) in [("0.2.0", "0.2.0"), ("0.1.5", "0.2.0")] {
        release.publish(&release.manifest(offered, PLATFORM, &archive, &release.artifact_url()));
        let err = app.updater(&release, running).check_now(now()).unwrap_err();
        assert!(err.is_up_to_date(), "{offered} on {running}: {err}");
    }
    assert!(!release.paths().iter().any(|p| p == ARTIFACT));
    assert_untouched(&app, &before);
}

#[test]
fn a_manifest_for_another_platform_is_refused() {
    let (release, _) = released("0.2.0", "windows-x86_64");
    let app = App::installed();
    let before = app.snapshot();
    let err = app.updater(&release, "0.1.0").check_now(now()).unwrap_err();
    assert!(
        matches!(&err, Error::Manifest(ManifestError::NoArtifact { platform, .. }) if platform == PLATFORM),
        "{err}"
    );
    assert!(!release.paths().iter().any(|p| p == ARTIFACT));
    assert_untouched(&app, &before);
}

#[test]
fn a_server_that_hangs_is_given_up_on_and_the_bundle_stays_as_it_was() {
    let release = Release::start();
    let archive = bundle_tar_gz();
    release.route(ARTIFACT, Route::Hang);
    release.publish(&release.manifest("0.2.0", PLATFORM, &archive, &release.artifact_url()));
    let app = App::installed();
    let before = app.snapshot();
    let updater = app.updater(&release, "0.1.0");
    let update = available(updater.check_now(now()).unwrap());

    let started = Instant::now();
    let err = updater.install(&update).unwrap_err();
    assert!(
        matches!(err, Error::Fetch(FetchError::Timeout { .. })),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_untouched(&app, &before);

    // The manifest's server hanging is given up on the same way.
    release.route("/latest.json", Route::Hang);
    let err = updater.check_now(now()).unwrap_err();
    assert!(
        matches!(err, Error::Fetch(FetchError::Timeout { .. })),
        "{err}"
    );
}

#[test]
fn a_second_check_within_the_day_asks_nothing_and_a_skipped_version_is_not_offered() {
    let (release, archive) = released("0.2.0", PLATFORM);
    let app = App::installed();
    let updater = app.updater(&release, "0.1.0");

    let update = available(updater.check_if_due(now()).unwrap());
    assert_eq!(release.paths().len(), 2);
    let later = now() + Duration::from_secs(23 * 3600);
    assert_eq!(
        updater.check_if_due(later).unwrap(),
        Check::NotDue {
            next: Some(now() + throttle::INTERVAL)
        }
    );
    assert_eq!(release.paths().len(), 2, "nothing was asked");

    updater.skip(update.version()).unwrap();
    let next_day = now() + throttle::INTERVAL;
    assert_eq!(
        updater.check_if_due(next_day).unwrap(),
        Check::Skipped(Version::new(0, 2, 0))
    );
    assert_eq!(release.paths().len(), 4, "checked again a day later");
    let state = throttle::StateFile::in_dir(app.state.path())
        .load()
        .unwrap();
    assert_eq!(state.last_seen, Some(Version::new(0, 2, 0)));

    // A later version than the skipped one is offered.
    release.publish(&release.manifest("0.2.1", PLATFORM, &archive, &release.artifact_url()));
    let update = available(updater.check_now(next_day).unwrap());
    assert_eq!(update.version(), &Version::new(0, 2, 1));
}

#[test]
fn a_linux_package_leaves_updates_to_apt_and_asks_nothing() {
    let installation =
        Installation::detect_for("linux", "x86_64", Path::new("/usr/bin/sessionpipe-app"));
    assert_eq!(installation, Installation::Apt);
    let (release, _) = released("0.2.0", "linux-x86_64");
    let state = tempfile::tempdir().unwrap();
    let mut config = Config::new(
        Version::new(0, 1, 0),
        format!("{}/latest.json", release.server.base_url()),
        state.path(),
        installation,
    );
    config.public_key = release.key.verifying_key().to_bytes();
    let updater = Updater::new(config).unwrap();
    let apt = Check::LeftTo("updates come from apt");
    assert_eq!(updater.check_if_due(now()).unwrap(), apt);
    assert_eq!(updater.check_now(now()).unwrap(), apt);
    assert!(release.server.requests().is_empty(), "no request at all");
    assert!(
        !state.path().join(throttle::FILE_NAME).exists(),
        "nothing written either"
    );
}

#[test]
fn each_install_is_told_by_where_the_app_runs_from() {
    let detect = |os, arch, exe: &str| Installation::detect_for(os, arch, Path::new(exe));
    assert_eq!(
        detect(
            "macos",
            "aarch64",
            "/Applications/sessionpipe.app/Contents/MacOS/sessionpipe-app"
        ),
        Installation::Bundle {
            bundle: "/Applications/sessionpipe.app".into(),
            exe_in_bundle: EXE.into(),
            platform: PLATFORM.into(),
        }
    );
    assert_eq!(
        detect(
            "macos",
            "x86_64",
            "/Users/a/src/target/debug/sessionpipe-app"
        ),
        Installation::NotInstalled
    );
    assert_eq!(
        detect(
            "windows",
            "x86_64",
            r"C:\Program Files\sessionpipe\sessionpipe-app.exe"
        ),
        Installation::Msi {
            exe: r"C:\Program Files\sessionpipe\sessionpipe-app.exe".into(),
            platform: "windows-x86_64".into(),
        }
    );
    assert_eq!(
        detect("linux", "x86_64", "/home/a/.cargo/bin/sessionpipe-app"),
        Installation::NotInstalled
    );
    assert_eq!(
        detect("freebsd", "x86_64", "/usr/local/bin/x"),
        Installation::NotInstalled
    );
}
