//! The order people read device names in: `loop2` before `loop10`,
//! `nvme2n1` before `nvme10n1`. Discovery, `list`, `watch`, recordings and
//! the TUI all sort with [`natural_cmp`], so a name has one place everywhere.

use std::cmp::Ordering;

/// Compare runs of digits as numbers and everything else byte by byte; a
/// total order (names equal as numbers, `loop01` and `loop1`, fall back to
/// plain byte order).
pub fn natural_cmp(arg: &str, b: &str) -> Ordering {
    let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
    let zeros = |s: &[u8]| s.iter().take_while(|&&c| c == b'0').count();
    let (mut x, mut y) = (arg.as_bytes(), b.as_bytes());
    loop {
        match (x.first(), y.first()) {
            (None, None) => return arg.cmp(b),
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(c), Some(d)) if c.is_ascii_digit() && d.is_ascii_digit() => {
                let (nx, ny) = (digits(x), digits(y));
                let (tx, ty) = (&x[zeros(&x[..nx])..nx], &y[zeros(&y[..ny])..ny]);
                // Without leading zeros a longer number is a larger one.
                match tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty)) {
                    Ordering::Equal => (x, y) = (&x[nx..], &y[ny..]),
                    o => return o,
                }
            }
            (Some(c), Some(d)) if c != d => return c.cmp(d),
            _ => (x, y) = (&x[1..], &y[1..]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_in_names_sort_as_numbers() {
        let mut v = [
            "loop10", "sda", "loop2", "nvme0n1", "loop", "nvme10n1", "nvme2n1", "sda10", "sda2",
            "loop100", "dm-1", "dm-0",
        ];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(
            v,
            [
                "dm-0", "dm-1", "loop", "loop2", "loop10", "loop100", "nvme0n1", "nvme2n1",
                "nvme10n1", "sda", "sda2", "sda10"
            ]
        );
    }

    #[test]
    fn the_order_is_total() {
        assert_eq!(natural_cmp("loop1", "loop1"), Ordering::Equal);
        // Equal as numbers, still two names: never Equal, and antisymmetric.
        assert_eq!(natural_cmp("loop01", "loop1"), Ordering::Less);
        assert_eq!(natural_cmp("loop1", "loop01"), Ordering::Greater);
        assert_eq!(natural_cmp("loop9", "loop10"), Ordering::Less);
        assert_eq!(natural_cmp("sda", "sda1"), Ordering::Less);
        // A number longer than any integer type still compares.
        assert_eq!(
            natural_cmp("x99999999999999999999999", "x100000000000000000000000"),
            Ordering::Less
        );
    }
}
