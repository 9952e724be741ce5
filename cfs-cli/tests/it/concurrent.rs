//! Processes searching while another commits.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{cfs_in, sample_tree};

/// Two processes search (each opening the index file, bringing it forward, and now and
/// then rewriting it) while a third commits edit after edit: every answer comes from
/// one committed state: all its hits carry one root, and that root is in the store's
/// chain.
#[test]
fn searches_during_commits_answer_from_one_committed_root() {
    let dir = sample_tree();
    let root = dir.path().to_path_buf();
    let (code, _, err) = cfs_in(&root, &["index"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = cfs_in(&root, &["search", "walrus"]);
    assert_eq!(code, 0, "{err}");
    let done = Arc::new(AtomicBool::new(false));
    let roots: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (root, done, roots) = (root.clone(), Arc::clone(&done), Arc::clone(&roots));
            std::thread::spawn(move || {
                let mut answers = 0;
                while !done.load(Ordering::SeqCst) || answers == 0 {
                    let (code, out, err) = cfs_in(&root, &["search", "walrus", "--json"]);
                    assert_eq!(code, 0, "{err}");
                    let hits: Vec<Value> = serde_json::from_str(&out).unwrap();
                    let seen: BTreeSet<String> = hits
                        .iter()
                        .map(|h| h["root"].as_str().unwrap().to_owned())
                        .collect();
                    assert!(seen.len() <= 1, "one answer, several roots: {seen:?}");
                    roots.lock().unwrap().extend(seen);
                    answers += 1;
                }
            })
        })
        .collect();
    for i in 0..8 {
        let text = format!("The walrus number {i} said {}.\n", "words ".repeat(i * 40));
        std::fs::write(root.join(format!("notes{}.txt", i % 3)), text).unwrap();
        let (code, _, err) = cfs_in(&root, &["index"]);
        assert_eq!(code, 0, "{err}");
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        r.join().unwrap();
    }
    let (code, out, err) = cfs_in(&root, &["log", "--json", "-n", "100"]);
    assert_eq!(code, 0, "{err}");
    let chain: BTreeSet<String> = serde_json::from_str::<Vec<Value>>(&out)
        .unwrap()
        .iter()
        .map(|r| r["root"].as_str().unwrap().to_owned())
        .collect();
    let roots = roots.lock().unwrap();
    assert!(!roots.is_empty());
    assert!(roots.is_subset(&chain), "{roots:?} not all in {chain:?}");
}
