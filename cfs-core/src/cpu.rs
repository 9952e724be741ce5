//! One decision per process of which instruction sets the SIMD code of cfs may use: the
//! hashing lanes, the embedding kernels and layer loops, the Hamming distances. Every
//! path computes the same bits as the portable code, so the decision changes speed,
//! never a result. `CFS_SIMD` narrows it, for tests, benchmarks and bug reports:
//!
//! | `CFS_SIMD` | what may run |
//! |---|---|
//! | unset, empty or `auto` | everything the CPU has |
//! | `portable` | the portable code only (no `popcnt` or NEON kernel either) |
//! | `avx2` | AVX2 (and `popcnt`) |
//! | `avx-vnni` | AVX2 and AVX-VNNI |
//! | `avx512` | AVX2 and AVX-512 (F, BW, DQ, VL) |
//! | `avx512-vnni` | those and AVX-512 VNNI (`vpdpwssd` on 512-bit registers) |
//! | `amx` | those and AMX's integer tiles (`tdpbssd`, `tdpbusd`) |
//! | `neon` | the NEON kernels (64-bit ARM) |
//!
//! AMX counts as present only when the CPU reports AMX-TILE and AMX-INT8 and Linux grants
//! this process the tile state (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`,
//! asked once, the first time the features are read): an old kernel, a virtual machine
//! that hides the state or a refusal leaves the next path, never a fault.
//!
//! A name this build does not know, or one whose instructions the CPU lacks, is an
//! error of [`Features::from_env`], which the CLI reports before doing anything; code
//! that only asks [`features`] then runs the portable path, never a crash.

use std::sync::OnceLock;

/// The instruction sets the SIMD code may use in this process.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// AVX2.
    pub avx2: bool,
    /// AVX-VNNI (`vpdpwssd` on 256-bit registers).
    pub avx_vnni: bool,
    /// AVX-512 F, BW, DQ and VL.
    pub avx512: bool,
    /// AVX-512 VNNI (with AVX-512 F, BW, DQ and VL).
    pub avx512_vnni: bool,
    /// AMX-TILE and AMX-INT8, the tile state granted by the OS.
    pub amx: bool,
    /// `popcnt`.
    pub popcnt: bool,
    /// NEON (every 64-bit ARM CPU has it).
    pub neon: bool,
}

/// The names `CFS_SIMD` takes, besides `auto`.
pub const SIMD_NAMES: [&str; 7] = [
    "portable",
    "avx2",
    "avx-vnni",
    "avx512",
    "avx512-vnni",
    "amx",
    "neon",
];

impl Features {
    /// Everything the CPU has (and, for AMX, the OS grants), found once per process.
    pub fn detected() -> Self {
        static DETECTED: OnceLock<Features> = OnceLock::new();
        *DETECTED.get_or_init(Self::detect)
    }

    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let avx2 = has!("avx2");
            let avx512 =
                avx2 && has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl");
            let avx512_vnni = avx512 && has!("avx512vnni");
            Self {
                avx2,
                avx_vnni: avx2 && has!("avxvnni"),
                avx512,
                avx512_vnni,
                amx: avx512_vnni && amx_int8_reported() && tiles_granted(),
                popcnt: has!("popcnt"),
                neon: false,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Self {
            neon: cfg!(target_arch = "aarch64"),
            ..Self::default()
        }
    }

    /// What `name` (one of [`SIMD_NAMES`] or `auto`) allows on a CPU with `cpu`.
    pub fn named(name: &str, cpu: Self) -> Result<Self, String> {
        let avx2 = Self {
            avx2: true,
            popcnt: cpu.popcnt,
            ..Self::default()
        };
        let wanted = match name {
            "" | "auto" => return Ok(cpu),
            "portable" => Self::default(),
            "neon" => Self {
                neon: true,
                ..Self::default()
            },
            "avx2" => avx2,
            "avx-vnni" => Self {
                avx_vnni: true,
                ..avx2
            },
            "avx512" => Self {
                avx512: true,
                ..avx2
            },
            "avx512-vnni" => Self {
                avx512: true,
                avx512_vnni: true,
                ..avx2
            },
            "amx" => Self {
                avx512: true,
                avx512_vnni: true,
                amx: true,
                ..avx2
            },
            _ => {
                return Err(format!(
                    "CFS_SIMD={name}: not a path of this build (auto, {})",
                    SIMD_NAMES.join(", ")
                ));
            }
        };
        if !wanted.within(cpu) {
            return Err(format!("CFS_SIMD={name}: this CPU does not have it"));
        }
        Ok(wanted)
    }

    /// Whether everything these features allow, `cpu` has.
    pub fn within(self, cpu: Self) -> bool {
        let has = |wanted: bool, present: bool| !wanted || present;
        has(self.avx2, cpu.avx2)
            && has(self.avx_vnni, cpu.avx_vnni)
            && has(self.avx512, cpu.avx512)
            && has(self.avx512_vnni, cpu.avx512_vnni)
            && has(self.amx, cpu.amx)
            && has(self.popcnt, cpu.popcnt)
            && has(self.neon, cpu.neon)
    }

    /// What `CFS_SIMD` allows on this CPU.
    pub fn from_env() -> Result<Self, String> {
        let name = std::env::var("CFS_SIMD").unwrap_or_default();
        Self::named(&name, Self::detected())
    }
}

/// CPUID leaf 7: AMX-TILE (EDX bit 24) and AMX-INT8 (EDX bit 25). The standard library's
/// detection of these is not stable yet.
#[cfg(target_arch = "x86_64")]
fn amx_int8_reported() -> bool {
    let leaf0 = std::arch::x86_64::__cpuid(0);
    if leaf0.eax < 7 {
        return false;
    }
    let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
    edx & (1 << 24) != 0 && edx & (1 << 25) != 0
}

/// Asks Linux for the AMX tile state (`ARCH_REQ_XCOMP_PERM` with `XFEATURE_XTILEDATA`):
/// without the grant the first tile instruction faults. The kernel refuses when it or
/// the machine does not support the state (its check covers XCR0), or when a thread's
/// signal stack is too small to save it.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
#[expect(unsafe_code)]
fn tiles_granted() -> bool {
    const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
    const XFEATURE_XTILEDATA: libc::c_long = 18;
    // SAFETY: arch_prctl with this request reads two integers and touches no memory of
    // the process; a refusal is an error return.
    let r = unsafe {
        libc::syscall(
            libc::SYS_arch_prctl,
            ARCH_REQ_XCOMP_PERM,
            XFEATURE_XTILEDATA,
        )
    };
    r == 0
}

#[cfg(all(target_arch = "x86_64", not(target_os = "linux")))]
fn tiles_granted() -> bool {
    false
}

/// The instruction sets this process uses, decided once: [`Features::from_env`], or the
/// portable code when `CFS_SIMD` is not valid here.
pub fn features() -> Features {
    static FEATURES: OnceLock<Features> = OnceLock::new();
    *FEATURES.get_or_init(|| Features::from_env().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: Features = Features {
        avx2: true,
        avx_vnni: true,
        avx512: true,
        avx512_vnni: true,
        amx: true,
        popcnt: true,
        neon: false,
    };

    #[test]
    fn a_name_narrows_what_the_cpu_has_and_never_widens_it() {
        assert_eq!(Features::named("auto", ALL), Ok(ALL));
        assert_eq!(Features::named("portable", ALL), Ok(Features::default()));
        let avx2 = Features::named("avx2", ALL).unwrap();
        assert!(avx2.avx2 && avx2.popcnt && !avx2.avx_vnni && !avx2.avx512);
        let vnni = Features::named("avx-vnni", ALL).unwrap();
        assert!(vnni.avx_vnni && !vnni.avx512);
        let wide = Features::named("avx512-vnni", ALL).unwrap();
        assert!(wide.avx512 && wide.avx512_vnni && !wide.amx && !wide.avx_vnni);
        let amx = Features::named("amx", ALL).unwrap();
        assert!(amx.amx && amx.avx512_vnni && amx.avx512);
        assert!(Features::named("amx", Features { amx: false, ..ALL }).is_err());
        let only_avx2 = Features {
            avx2: true,
            ..Features::default()
        };
        let err = Features::named("avx512", only_avx2).unwrap_err();
        assert!(err.contains("does not have"), "{err}");
        let err = Features::named("tiles", ALL).unwrap_err();
        assert!(
            err.contains("portable, avx2, avx-vnni, avx512, avx512-vnni, amx, neon"),
            "{err}"
        );
        assert!(
            Features::named("neon", ALL).is_err(),
            "an x86 CPU has no NEON"
        );
    }

    #[test]
    fn the_process_decision_is_one_the_cpu_allows() {
        assert!(features().within(Features::detected()));
    }
}
