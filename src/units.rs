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

/// A size threshold as a user writes it: bytes (`1048576`), IEC or SI
/// units (`10MiB`, `5 GB`, `0`), or a percentage of some total (`1%`,
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
        let split = t
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(t.len());
        let (num, unit) = t.split_at(split);
        let mult: u64 = match unit.trim() {
            "" | "B" => 1,
            "KiB" | "K" => 1 << 10,
            "MiB" | "M" => 1 << 20,
            "GiB" | "G" => 1 << 30,
            "TiB" | "T" => 1 << 40,
            "kB" | "KB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            "TB" => 1_000_000_000_000,
            other => {
                return Err(format!(
                    "'{s}': unknown unit '{other}' (use B, KiB, MiB, GiB, TiB, or a %)"
                ));
            }
        };
        let v: f64 = num
            .parse()
            .map_err(|_| format!("'{s}' is not a size (like 10MiB, 1048576 or 1%)"))?;
        let bytes = v * mult as f64;
        if !bytes.is_finite() || bytes >= u64::MAX as f64 {
            return Err(format!("'{s}' is too large"));
        }
        Ok(Threshold::Bytes(bytes.ceil() as u64))
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
