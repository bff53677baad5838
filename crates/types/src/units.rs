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

/// `1536` → `+1.5 KiB`, `-1536` → `-1.5 KiB`: a size change.
pub fn iec_delta(delta: i128) -> String {
    let mag = u64::try_from(delta.unsigned_abs()).unwrap_or(u64::MAX);
    let sign = if delta < 0 { "-" } else { "+" };
    format!("{sign}{}", iec(mag))
}

/// Parses a size as people write budgets: a number (decimals allowed) and
/// an optional unit, IEC (`KiB`, `MiB`, `GiB`, `TiB`, `PiB`, `EiB`, powers of
/// 1024) or SI (`kB`/`KB`, `MB`, `GB`, `TB`, `PB`, `EB`, powers of 1000), or
/// `B` / none for bytes; spaces between number and unit are allowed.
/// Hand-written because no size crate accepts exactly Nix users' spelling
/// and reports the unit it did not know. Errors are usage errors naming the
/// value.
pub fn parse_size(s: &str) -> crate::Result<u64> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let bad = |why: &str| crate::Error::Usage(format!("bad size '{s}': {why}"));
    if num.is_empty() || num.starts_with('.') || num.ends_with('.') || num.matches('.').count() > 1
    {
        return Err(bad("expected a number such as 900MB or 1.5GiB"));
    }
    let factor: u64 = match unit {
        "" | "B" => 1,
        "KiB" | "K" => 1 << 10,
        "MiB" | "M" => 1 << 20,
        "GiB" | "G" => 1 << 30,
        "TiB" | "T" => 1 << 40,
        "PiB" | "P" => 1 << 50,
        "EiB" | "E" => 1 << 60,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "TB" => 1_000_000_000_000,
        "PB" => 1_000_000_000_000_000,
        "EB" => 1_000_000_000_000_000_000,
        u => {
            return Err(bad(&format!(
                "unknown unit '{u}' (use B, KiB, MiB, GiB, TiB, or kB, MB, GB, TB)"
            )));
        }
    };
    // Exact integer arithmetic on the digits: a float would round budgets
    // like 1.1GB, and the result must not wrap.
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let too_big = || bad("larger than 16 EiB");
    let whole: u128 = int.parse().map_err(|_| too_big())?;
    let mut bytes = whole.checked_mul(factor as u128).ok_or_else(too_big)?;
    if !frac.is_empty() {
        if frac.len() > 18 {
            return Err(bad("too many decimals"));
        }
        let f: u128 = frac.parse().map_err(|_| too_big())?;
        let scale = 10u128.pow(frac.len() as u32);
        bytes = bytes
            .checked_add(f * factor as u128 / scale)
            .ok_or_else(too_big)?;
    }
    u64::try_from(bytes).map_err(|_| too_big())
}

/// A size threshold as a user writes it: a size [`parse_size`] reads
/// (`1048576`, `10MiB`, `5 GB`, `0`), or a percentage of some total (`1%`,
/// `0.5%`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Threshold {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A percentage of the total it is applied to.
    Percent(f64),
}

impl Threshold {
    /// The threshold in bytes, against `total` for a percentage (rounded
    /// up, so `1%` of anything non-empty is at least one byte).
    pub fn bytes_of(self, total: u64) -> u64 {
        match self {
            Threshold::Bytes(b) => b,
            Threshold::Percent(p) => {
                ((total as f64) * p / 100.0).ceil().min(u64::MAX as f64) as u64
            }
        }
    }
}

impl std::str::FromStr for Threshold {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let t = s.trim();
        if let Some(p) = t.strip_suffix('%') {
            let v: f64 = p
                .trim()
                .parse()
                .map_err(|_| format!("'{s}' is not a percentage"))?;
            if !(0.0..=100.0).contains(&v) {
                return Err(format!("'{s}' is not between 0% and 100%"));
            }
            return Ok(Threshold::Percent(v));
        }
        parse_size(t)
            .map(Threshold::Bytes)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::iec;

    #[test]
    fn thresholds() {
        use super::Threshold;
        assert_eq!("0".parse::<Threshold>(), Ok(Threshold::Bytes(0)));
        assert_eq!("10MiB".parse::<Threshold>(), Ok(Threshold::Bytes(10 << 20)));
        assert_eq!("1.5 KiB".parse::<Threshold>(), Ok(Threshold::Bytes(1536)));
        assert_eq!("1%".parse::<Threshold>().unwrap().bytes_of(1000), 10);
        assert_eq!("1%".parse::<Threshold>().unwrap().bytes_of(1), 1);
        assert!("x".parse::<Threshold>().is_err());
        assert!("5 parsecs".parse::<Threshold>().is_err());
        assert!("200%".parse::<Threshold>().is_err());
    }

    #[test]
    fn parses_sizes() {
        use super::parse_size as p;
        assert_eq!(p("1GiB").unwrap(), 1 << 30);
        assert_eq!(p("900MB").unwrap(), 900_000_000);
        assert_eq!(p("1.5 KiB").unwrap(), 1536);
        assert_eq!(p("1.1GB").unwrap(), 1_100_000_000);
        assert_eq!(p("123").unwrap(), 123);
        assert!(p("16EiB").is_err());
        assert_eq!(p("15EiB").unwrap(), 15 << 60);
        for bad in [
            "",
            "GiB",
            "1.2.3MB",
            "12 parsecs",
            "1mb",
            "-1MB",
            ".5G",
            "5.G",
        ] {
            let e = p(bad).unwrap_err();
            assert!(e.is_usage(), "{bad}");
            assert!(e.to_string().contains(&format!("'{bad}'")), "{e}");
        }
        assert!(
            p("1 XB")
                .unwrap_err()
                .to_string()
                .contains("unknown unit 'XB'")
        );
    }
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
