//! An idle watcher stays idle: after its first sync, no sync and no CPU to speak of.

use std::io::BufRead;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::support::{cfs_in, sample_tree};

/// User plus system CPU seconds of process `pid` so far (Linux `/proc`).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

#[test]
fn an_idle_watcher_makes_no_sync_and_spends_no_cpu() {
    if crate::support::skip_slow("an_idle_watcher_makes_no_sync_and_spends_no_cpu") {
        return;
    }
    let dir = sample_tree();
    let root = dir.path();
    assert_eq!(
        cfs_in(root, &["index", "--embedder", "hash", "--json"]).0,
        0
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_cfs"))
        .args(["watch", "--json"])
        .current_dir(root)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let v: Value = serde_json::from_str(&line).unwrap();
            let _ = tx.send(v["event"].as_str().unwrap_or("").to_owned());
        }
    });
    let first: Vec<String> = (0..2)
        .map(|_| rx.recv_timeout(Duration::from_secs(60)).unwrap())
        .collect();
    assert_eq!(first, ["synced", "watching"]);
    let before = cpu_seconds(child.id());
    std::thread::sleep(Duration::from_secs(10));
    let spent = cpu_seconds(child.id()) - before;
    let later: Vec<String> = rx.try_iter().collect();
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    assert!(child.wait().unwrap().success());
    assert!(later.is_empty(), "events on an idle tree: {later:?}");
    assert!(
        spent < 0.1,
        "an idle watcher spent {spent} s of CPU in 10 s"
    );
}
