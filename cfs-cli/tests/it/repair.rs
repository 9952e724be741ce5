//! `cfs repair`: a damaged store is rebuilt from its tree and verifies again.

use serde_json::Value;

use crate::support::{cfs_in, sample_tree};

fn flip(path: &std::path::Path, seed: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for _ in 0..8 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let at = (x % bytes.len() as u64) as usize;
        bytes[at] ^= 1 << (x % 8);
    }
    std::fs::write(path, bytes).unwrap();
}

/// Sets a meta value of the store of the tree at `root`, behind the store's back.
fn set_meta(root: &std::path::Path, key: &str, value: &[u8]) {
    let db = redb::Database::open(root.join(".cfs/store.redb")).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let def: redb::TableDefinition<'_, &[u8], &[u8]> = redb::TableDefinition::new("meta");
        txn.open_table(def)
            .unwrap()
            .insert(key.as_bytes(), value)
            .unwrap();
    }
    txn.commit().unwrap();
}

/// The sample tree indexed with the hash embedder, and its state root.
fn indexed() -> (tempfile::TempDir, Value) {
    let dir = sample_tree();
    assert_eq!(
        cfs_in(dir.path(), &["index", "--embedder", "hash", "--json"]).0,
        0
    );
    let good = root_of(dir.path());
    (dir, good)
}

fn root_of(dir: &std::path::Path) -> Value {
    let (code, out, err) = cfs_in(dir, &["status", "--json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Value>(&out).unwrap()["state_root"].clone()
}

#[test]
fn a_damaged_store_is_rebuilt_and_verifies() {
    let (dir, good) = indexed();
    let root = dir.path();
    let file = root.join(".cfs/store.redb");
    let pristine = std::fs::read(&file).unwrap();
    // Flip bytes until verify sees damage (some flips land in unused space) in a store
    // whose settings still read (else repair asks for the embedder: the next test).
    let settings_read = || {
        let out = cfs_in(root, &["status", "--json"]).1;
        serde_json::from_str::<Value>(&out).is_ok_and(|v| v["embedder"].is_string())
    };
    let damaged = (0..200u64).any(|seed| {
        std::fs::write(&file, &pristine).unwrap();
        flip(&file, seed);
        cfs_in(root, &["verify", "--json"]).0 != 0 && settings_read()
    });
    assert!(damaged, "no flip was noticed");
    let (code, out, err) = cfs_in(root, &["repair", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["state_root"], good);
    assert!(std::path::Path::new(v["damaged_kept_at"].as_str().unwrap()).is_file());
    let (code, _, err) = cfs_in(root, &["verify"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(root_of(root), good);
}

#[test]
fn a_store_of_garbage_is_rebuilt_with_the_embedder_named() {
    let (dir, good) = indexed();
    let root = dir.path();
    let garbage = || std::fs::write(root.join(".cfs/store.redb"), vec![0x5a; 64 * 1024]).unwrap();
    garbage();
    let (code, _, err) = cfs_in(root, &["repair", "--embedder", "hash", "--json"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(root_of(root), good);
    // Nothing names an embedder, nothing was salvaged: the default, said so.
    garbage();
    let (code, out, err) = cfs_in(root, &["repair", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (&v["embedder"], &v["embedder_from"], &v["vectors_salvaged"]),
        (&"minilm-int".into(), &"the default".into(), &0.into()),
        "{out}"
    );
}

#[test]
fn unreadable_settings_take_the_embedder_of_the_salvaged_vectors() {
    let (dir, good) = indexed();
    let root = dir.path();
    set_meta(root, "settings", b"not settings");
    let (code, out, err) = cfs_in(root, &["repair", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["embedder"], "hash", "{out}");
    assert_eq!(v["embedder_from"], "the salvaged vectors", "{out}");
    assert!(v["vectors_salvaged"].as_u64().unwrap() > 0, "{out}");
    assert_eq!(v["texts_embedded"], 0, "{out}");
    assert_eq!(root_of(root), good);
    // Said on stderr in the text form.
    set_meta(root, "settings", b"not settings");
    let (code, _, err) = cfs_in(root, &["repair"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("settings cannot be read") && err.contains("hash (the salvaged vectors)"),
        "{err}"
    );
}

#[test]
fn status_notices_roots_that_disagree_with_the_chain() {
    let (dir, _) = indexed();
    let root = dir.path();
    set_meta(root, "table_roots", &[0u8; 160]);
    let (code, out, _) = cfs_in(root, &["status", "--json"]);
    assert_eq!(code, 1);
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["consistent"],
        false
    );
    let (code, out, _) = cfs_in(root, &["status"]);
    assert_eq!(code, 1);
    assert!(
        out.contains("DAMAGED") && out.contains("cfs repair"),
        "{out}"
    );
    assert_eq!(cfs_in(root, &["repair"]).0, 0);
    assert_eq!(cfs_in(root, &["status"]).0, 0);
}

#[test]
fn a_damaged_or_missing_chunk_log_is_rebuilt_with_its_store() {
    let (dir, good) = indexed();
    let root = dir.path();
    let log = cfs_store::chunk_log_path(&root.join(".cfs/store.redb"));
    let pristine = std::fs::read(&log).unwrap();
    flip(&log, 1);
    let (code, out, _) = cfs_in(root, &["verify", "--json"]);
    assert_eq!(code, 1, "{out}");
    let (code, out, err) = cfs_in(root, &["repair", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["state_root"], good);
    // The damaged store's log is kept beside it, as it was.
    let aside =
        cfs_store::chunk_log_path(std::path::Path::new(v["damaged_kept_at"].as_str().unwrap()));
    assert_ne!(std::fs::read(&aside).unwrap(), pristine);
    assert_eq!(cfs_in(root, &["verify"]).0, 0);

    std::fs::remove_file(&log).unwrap();
    let (code, _, err) = cfs_in(root, &["status"]);
    assert_eq!(code, 1);
    assert!(err.contains("missing") && err.contains(".chunks"), "{err}");
    let (code, _, err) = cfs_in(root, &["repair"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(root_of(root), good);
}

#[test]
fn a_store_of_the_previous_schema_is_refused_and_rebuilt_by_repair() {
    let (dir, good) = indexed();
    let root = dir.path();
    set_meta(root, "schema_version", &2u32.to_le_bytes());
    let (code, _, err) = cfs_in(root, &["status"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("schema version 2") && err.contains("cfs repair"),
        "{err}"
    );
    // Its settings are read from meta: no embedder needs naming.
    let (code, _, err) = cfs_in(root, &["repair"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(root_of(root), good);
}

/// A read command on a damaged store (truncated, or bytes of its pages overwritten, at
/// many places) answers or fails naming the store file, never with a bare error of the
/// storage engine or a panic's text alone.
#[test]
fn read_commands_on_a_damaged_store_name_it() {
    let (dir, _) = indexed();
    let file = dir.path().join(".cfs/store.redb");
    let good = std::fs::read(&file).unwrap();
    let mut damages = vec![good[..good.len() / 2].to_vec(), good[..4096].to_vec()];
    for seed in 0..12u64 {
        let mut bytes = good.clone();
        let at = (seed as usize * 7919 + 4096) % (good.len() - 1024);
        for (i, b) in bytes[at..at + 1024].iter_mut().enumerate() {
            *b = (i as u64 * 37 + seed * 11) as u8;
        }
        damages.push(bytes);
    }
    let shown = file.display().to_string();
    for (n, bytes) in damages.iter().enumerate() {
        std::fs::write(&file, bytes).unwrap();
        for args in [
            &["status"][..],
            &["log"],
            &["show", "src/lib.rs"],
            &["search", "add"],
        ] {
            let (code, _, err) = cfs_in(dir.path(), args);
            if code != 0 {
                assert!(err.contains(&shown), "damage {n}, {args:?}: {err}");
                assert!(!err.contains("panicked"), "damage {n}, {args:?}: {err}");
            }
        }
    }
}

/// `cfs verify --json` of a store it cannot read through (a truncated store file, a
/// chunk log overwritten) still answers with its report: not ok, the problem naming the
/// file and `cfs repair`, exit 1.
#[test]
fn verify_reports_a_store_it_cannot_read_through() {
    let (dir, _) = indexed();
    let file = dir.path().join(".cfs/store.redb");
    let log = cfs_store::chunk_log_path(&file);
    let (good, good_log) = (std::fs::read(&file).unwrap(), std::fs::read(&log).unwrap());
    let mut scrambled = good_log.clone();
    for (i, b) in scrambled.iter_mut().enumerate().skip(64) {
        *b = (i * 31 + 7) as u8;
    }
    let damages = [
        (
            good[..good.len() / 2].to_vec(),
            good_log.clone(),
            file.clone(),
        ),
        (good.clone(), scrambled, log.clone()),
    ];
    for (store_bytes, log_bytes, named) in damages {
        std::fs::write(&file, store_bytes).unwrap();
        std::fs::write(&log, log_bytes).unwrap();
        let (code, out, err) = cfs_in(dir.path(), &["verify", "--json"]);
        assert_eq!(code, 1, "{out} {err}");
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?} {err}"));
        assert_eq!(v["ok"], false);
        let problem = v["problems"][0].as_str().unwrap();
        let shown = named.display().to_string();
        assert!(
            problem.contains(&shown) && problem.contains("cfs repair"),
            "{problem}"
        );
    }
}
