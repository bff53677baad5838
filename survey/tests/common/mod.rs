//! What the survey's integration tests share: ports on 127.0.0.1 and the
//! object-store servers they start there.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A free TCP port of 127.0.0.1 (bound, then let go for the process that
/// is to take it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Waits until something accepts on `port`, for at most 60 s.
pub fn wait_listening(port: u16, who: &mut std::process::Child) {
    let start = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(st)) = who.try_wait() {
            panic!("exited before listening on {port}: {st}");
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "nothing listens on {port}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A server this test starts on 127.0.0.1, killed when dropped: Debian's
/// `rclone serve webdav`, or `s3s-fs` (an S3 server over a directory,
/// installed by the test script), serving the directory `root`.
pub struct ObjectServer {
    child: std::process::Child,
    /// Where the server keeps what it is sent.
    pub root: PathBuf,
    /// The `-o` URL of a survey called `survey` on it.
    pub out: String,
    /// What a client needs in its environment.
    pub env: Vec<(&'static str, String)>,
    /// The server's log.
    pub log: PathBuf,
}

impl ObjectServer {
    pub fn webdav(tmp: &Path) -> ObjectServer {
        let port = free_port();
        let root = tmp.join(format!("webdav-{port}"));
        let log = tmp.join(format!("webdav-{port}.log"));
        std::fs::create_dir_all(&root).unwrap();
        let mut child = Command::new("rclone")
            .args(["serve", "webdav", "--addr"])
            .arg(format!("127.0.0.1:{port}"))
            .arg(&root)
            .env("RCLONE_CONFIG", tmp.join("rclone.conf"))
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("rclone (Debian's rclone package) is installed");
        wait_listening(port, &mut child);
        ObjectServer {
            child,
            root,
            out: format!("http://127.0.0.1:{port}/survey"),
            env: Vec::new(),
            log,
        }
    }

    pub fn s3(tmp: &Path, secret: &str) -> ObjectServer {
        let port = free_port();
        let root = tmp.join(format!("s3-{port}"));
        let log = tmp.join(format!("s3-{port}.log"));
        // The bucket: a directory of the server's root.
        std::fs::create_dir_all(root.join("heft")).unwrap();
        let mut child = Command::new("s3s-fs")
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args([
                "--access-key",
                "heft-test",
                "--secret-key",
                "heft-test-secret",
            ])
            .arg(&root)
            // Its log names every S3 operation it resolves.
            .env("RUST_LOG", "s3s=debug")
            .stdout(std::fs::File::create(&log).unwrap())
            .stderr(std::fs::File::create(tmp.join(format!("s3-{port}.err"))).unwrap())
            .spawn()
            .expect("s3s-fs (cargo install s3s-fs, by scripts/test.sh) is installed");
        wait_listening(port, &mut child);
        ObjectServer {
            child,
            root: root.join("heft"),
            out: "s3://heft/survey".into(),
            env: vec![
                ("AWS_ACCESS_KEY_ID", "heft-test".into()),
                ("AWS_SECRET_ACCESS_KEY", secret.into()),
                ("AWS_REGION", "us-east-1".into()),
                ("AWS_ENDPOINT", format!("http://127.0.0.1:{port}")),
            ],
            log,
        }
    }

    /// `bin` with this server's client environment.
    pub fn command(&self, bin: &str) -> Command {
        let mut c = Command::new(bin);
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }
}

impl Drop for ObjectServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
