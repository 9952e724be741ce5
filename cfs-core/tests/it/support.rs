//! What cfs-core's tests share: the switch for the slow tests (`CFS_SLOW_TESTS=1`,
//! which CI sets: property tests run more cases then).

/// `full` when the slow tests run (`CFS_SLOW_TESTS` is set), else `quick`.
pub fn scaled(quick: u32, full: u32) -> u32 {
    if std::env::var_os("CFS_SLOW_TESTS").is_some() {
        full
    } else {
        quick
    }
}
