//! Naming the file a parser ended the process on.
//!
//! The grammars' external scanners are C code; a defect in one that cfs does not guard
//! against yet (`cfs-ingest/src/code/scanners.rs`) can end the process with a fatal
//! signal, which no Rust code can turn into an error. Before the process ends, a
//! handler of those signals says which file the crashing thread was parsing
//! ([`cfs_ingest::parsing_now`]) and what to do, then restores the action that was
//! there before (the standard library's, which tells a stack overflow, or the default)
//! and lets the signal meet it, so the exit status and any core dump are what they
//! would have been. It writes with `write(2)` only: nothing that allocates or locks.

#![expect(unsafe_code)]

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

/// The fatal signals a defect in C code raises, with their names.
const SIGNALS: [(libc::c_int, &str); 5] = [
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGABRT, "SIGABRT"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGFPE, "SIGFPE"),
];

/// A handler that takes the signal's information.
type Handler = extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void);

/// The actions the signals had before [`install`], in the order of [`SIGNALS`].
static PREVIOUS: OnceLock<[libc::sigaction; SIGNALS.len()]> = OnceLock::new();

/// Installs the handler for every signal of [`SIGNALS`] (once; later calls do nothing).
pub fn install() {
    // SAFETY: a zeroed sigaction is a valid value of the C struct.
    let mut previous = [unsafe { std::mem::zeroed::<libc::sigaction>() }; SIGNALS.len()];
    for (old, &(signal, _)) in previous.iter_mut().zip(&SIGNALS) {
        // SAFETY: reads the current action into a valid struct.
        unsafe { libc::sigaction(signal, std::ptr::null(), old) };
    }
    if PREVIOUS.set(previous).is_err() {
        return;
    }
    // SAFETY: a zeroed sigaction is valid; the handler has the SA_SIGINFO signature.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = on_fatal as Handler as libc::sighandler_t;
    action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
    for &(signal, _) in &SIGNALS {
        // SAFETY: installs a handler that only writes and hands the signal on.
        unsafe {
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// Says which file was being parsed, if one was, then hands the signal on.
extern "C" fn on_fatal(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    _context: *mut libc::c_void,
) {
    static SAID: AtomicBool = AtomicBool::new(false);
    let at = SIGNALS.iter().position(|&(s, _)| s == signal);
    // SAFETY: this thread is inside the parse that set the mark, which cannot go on.
    if let (Some(at), Some((path, format))) = (at, unsafe { cfs_ingest::parsing_now() })
        && !SAID.swap(true, Ordering::SeqCst)
    {
        for part in [
            b"\ncfs: the ".as_slice(),
            format.as_bytes(),
            b" parser ended the process (".as_slice(),
            SIGNALS[at].1.as_bytes(),
            b") while reading ".as_slice(),
            path,
            b": a defect in a third-party grammar that cfs does not guard against yet. \
              To index the rest, list the file in a .ignore file; please report it with \
              the file.\n"
                .as_slice(),
        ] {
            write_all(part);
        }
    }
    hand_on(signal, at, info);
}

/// Writes `bytes` to standard error, as much as it takes.
fn write_all(mut bytes: &[u8]) {
    while !bytes.is_empty() {
        // SAFETY: writes from a valid buffer; write(2) is async-signal-safe.
        let n = unsafe { libc::write(2, bytes.as_ptr().cast(), bytes.len()) };
        if n <= 0 {
            return;
        }
        bytes = &bytes[n as usize..];
    }
}

/// Restores the action the signal had before [`install`] and lets it act. A fault
/// recurs when the handler returns, and meets that action (the standard library's,
/// which tells a stack overflow, or the default; an ignored fault would recur forever,
/// so it gets the default). A signal some process or thread sent does not recur: the
/// default action is restored and the signal raised again, to end the process when the
/// handler returns.
fn hand_on(signal: libc::c_int, at: Option<usize>, info: *const libc::siginfo_t) {
    // SAFETY: `info` is the kernel's, valid for the handler's life, when not null.
    let sent = info.is_null() || unsafe { (*info).si_code } <= 0;
    // SAFETY: a zeroed sigaction is a valid value of the C struct; zero is SIG_DFL.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = libc::SIG_DFL;
    if let Some(previous) = at.and_then(|at| Some(PREVIOUS.get()?[at]))
        && !sent
        && previous.sa_sigaction != libc::SIG_IGN
    {
        action = previous;
    }
    // SAFETY: restores an action the process had, and raises a signal it was sent.
    unsafe {
        libc::sigaction(signal, &action, std::ptr::null_mut());
        if sent {
            libc::raise(signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    /// Runs this test binary's test `name` alone with `CFS_CRASH_CHILD` set to `how`,
    /// and gives its terminating signal and standard error.
    fn child(name: &str, how: &str) -> (Option<i32>, String) {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--nocapture", "--test-threads=1"])
            .env("CFS_CRASH_CHILD", how)
            .output()
            .unwrap();
        (
            out.status.signal(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    /// In a child process: the handler installed, a file marked (or not), then the
    /// signal `how` names.
    fn crash_as_child() -> bool {
        let Ok(how) = std::env::var("CFS_CRASH_CHILD") else {
            return false;
        };
        super::install();
        let _mark = how
            .starts_with("marked")
            .then(|| cfs_ingest::ParsingMark::new("src/broken.sh", "shell"));
        if how == "marked-abort" {
            std::process::abort();
        }
        // SAFETY: a test that ends its own process.
        unsafe { libc::raise(libc::SIGSEGV) };
        unreachable!("the signal ends the process");
    }

    /// A fatal signal while a file is being parsed names the file and its parser,
    /// once, and the process still ends by that signal; without a file being parsed
    /// nothing is said.
    #[test]
    fn a_fatal_signal_while_parsing_names_the_file() {
        if crash_as_child() {
            return;
        }
        let name = "crash::tests::a_fatal_signal_while_parsing_names_the_file";
        let (signal, err) = child(name, "marked-segv");
        assert_eq!(signal, Some(libc::SIGSEGV), "{err}");
        assert!(
            err.contains(
                "the shell parser ended the process (SIGSEGV) while reading src/broken.sh"
            ),
            "{err}"
        );
        assert_eq!(err.matches("cfs: the").count(), 1);
        let (signal, err) = child(name, "marked-abort");
        assert_eq!(signal, Some(libc::SIGABRT), "{err}");
        assert!(
            err.contains("(SIGABRT) while reading src/broken.sh"),
            "{err}"
        );
        let (signal, err) = child(name, "unmarked");
        assert_eq!(signal, Some(libc::SIGSEGV), "{err}");
        assert!(!err.contains("cfs: the"), "{err}");
    }
}
