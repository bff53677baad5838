//! Nix's base-32 encoding ("nix32"), the alphabet of store path hash parts
//! and of `sha256:` NAR hashes.
//!
//! A leaf: store paths (hash parts), NAR hashes and the reference scanner
//! all use it, and it uses nothing, so none of them depends on another
//! through it. The name follows nix-compat's module of the same job.
//!
//! Nix's base-32 is little-endian in bits and writes the last character
//! first (libutil's `hash.cc`), which no base32 crate implements; encode
//! and decode are a few lines by hand.

/// Nix's base-32 alphabet: digits and lower-case letters without e, o, u, t.
pub const ALPHABET: &[u8; 32] = b"0123456789abcdfghijklmnpqrsvwxyz";

/// Whether a byte is in [`ALPHABET`], as a table so that a byte's
/// membership costs one load: the reference scanner's hot loop asks it for
/// every byte it looks at.
pub const IS_BASE32: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 32 {
        t[ALPHABET[i] as usize] = true;
        i += 1;
    }
    t
};

/// How many characters encode `bytes` bytes (52 for a SHA-256, 32 for a
/// store path's 20-byte hash part).
pub const fn encoded_len(bytes: usize) -> usize {
    (bytes * 8).div_ceil(5)
}

/// Encodes `bytes` in Nix's base-32.
pub fn encode(bytes: &[u8]) -> String {
    (0..encoded_len(bytes.len()))
        .rev()
        .map(|n| {
            let bit = n * 5;
            let (i, j) = (bit / 8, bit % 8);
            let lo = (bytes[i] as u16) >> j;
            let hi = if i + 1 < bytes.len() {
                (bytes[i + 1] as u16) << (8 - j)
            } else {
                0
            };
            ALPHABET[((lo | hi) & 0x1f) as usize] as char
        })
        .collect()
}

/// Decodes exactly `N` bytes from `s`: `None` unless `s` has
/// [`encoded_len`]`(N)` characters of the alphabet and sets no bit beyond
/// the `N` bytes (so every value has one spelling, as Nix requires).
pub fn decode<const N: usize>(s: &[u8]) -> Option<[u8; N]> {
    if s.len() != encoded_len(N) || !s.iter().all(|&c| IS_BASE32[c as usize]) {
        return None;
    }
    let mut out = [0u8; N];
    for n in 0..s.len() {
        let c = s[s.len() - 1 - n];
        let digit = ALPHABET.iter().position(|&x| x == c)? as u16;
        let bit = n * 5;
        let (i, j) = (bit / 8, bit % 8);
        out[i] |= (digit << j) as u8;
        let carry = digit >> (8 - j);
        if i + 1 < out.len() {
            out[i + 1] |= carry as u8;
        } else if carry != 0 {
            return None; // bits beyond the N bytes
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphabet_and_table_agree() {
        for b in 0..=255u8 {
            assert_eq!(IS_BASE32[b as usize], ALPHABET.contains(&b), "{b}");
        }
        for c in b"eout" {
            assert!(!IS_BASE32[*c as usize]);
        }
    }

    #[test]
    fn known_value_and_round_trips() {
        // `nix hash to-base32` of the SHA-256 of the empty string.
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let nix32 = "0mdqa9w1p6cmli6976v4wi0sw9r4p5prkj7lzfd1877wk11c9c73";
        let bytes: Vec<u8> = (0..32)
            .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert_eq!(encode(&bytes), nix32);
        assert_eq!(decode::<32>(nix32.as_bytes()).unwrap().to_vec(), bytes);
        for seed in 0..50u8 {
            let v: [u8; 20] =
                std::array::from_fn(|i| seed.wrapping_mul(31).wrapping_add(i as u8 * 7));
            let s = encode(&v);
            assert_eq!(s.len(), 32);
            assert_eq!(decode::<20>(s.as_bytes()), Some(v));
        }
    }

    #[test]
    fn rejects_wrong_length_letters_and_high_bits() {
        let ok = "0mdqa9w1p6cmli6976v4wi0sw9r4p5prkj7lzfd1877wk11c9c73";
        assert!(decode::<32>(&ok.as_bytes()[1..]).is_none());
        assert!(decode::<32>(ok.replace('0', "e").as_bytes()).is_none());
        // 52 characters hold 260 bits; the first character's top bits are
        // beyond 256 and must be zero.
        assert!(decode::<32>(format!("z{}", &ok[1..]).as_bytes()).is_none());
    }
}
