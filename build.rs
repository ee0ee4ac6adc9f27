//! Link options of the `play` binary.
//!
//! Relative relocations packed (`DT_RELR`, `-z pack-relative-relocs`): a
//! position-independent binary lists every pointer the loader must adjust
//! to where it was mapped, 24 bytes each in `.rela.dyn` (2 MB for play),
//! all read at every start and so resident. Packed, the list is a bitmap of
//! 31 KB: an idle `play serve` is 1.8 MB smaller (BENCHMARKS.md, "Idle
//! memory"), with address-space randomisation kept. It needs GNU ld 2.38
//! or lld 15 to link (an older GNU ld warns and ignores it) and glibc 2.36
//! to run (an older loader refuses the binary, naming
//! `GLIBC_ABI_DT_RELR`): Debian 12, Ubuntu 24.04, Fedora 37 and later.
//! Only the binary: test binaries link as before.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
