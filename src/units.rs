//! Sizes in IEC units, the way `nix path-info -h` and `du -h` users read
//! them.

/// `1536` → `1.5 KiB`; bytes below 1 KiB are printed exactly.
pub fn iec(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut u = 0;
    // Round first: 1048575 B would otherwise print as "1024.0 KiB".
    while (v * 10.0).round() >= 10240.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

#[cfg(test)]
mod tests {
    use super::iec;
    #[test]
    fn formats() {
        assert_eq!(iec(0), "0 B");
        assert_eq!(iec(1023), "1023 B");
        assert_eq!(iec(1024), "1.0 KiB");
        assert_eq!(iec(1536), "1.5 KiB");
        assert_eq!(iec(10_600_000_000), "9.9 GiB");
        assert_eq!(iec(1_048_575), "1.0 MiB");
        assert_eq!(iec(1_048_524), "1023.9 KiB");
    }
}
