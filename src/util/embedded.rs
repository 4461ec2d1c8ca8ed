//! The embedded catalogs (probes/*.toml) as typed data, read from toml's
//! parse tree by each type's `Embedded::read` (a few lines beside the type).
//! Deriving serde's `Deserialize` for them cost a copy of the deserializer
//! per type, 0.11 MB of the shipped binary for 45 types (bench/RESULTS.md,
//! "Size, issue 24"); they still derive it in the tests, where every catalog
//! is read both ways and the two must be equal (tests of each module). Like
//! `#[serde(deny_unknown_fields)]`, a key a type does not name is refused.
//! The catalogs are compiled in and checked by those tests, so reading them
//! at run time cannot fail.

use toml::de::{DeTable, DeValue};

/// A type read from a TOML value of an embedded catalog.
pub trait Embedded: Sized {
    fn read(v: &DeValue<'_>) -> Result<Self, String>;
}

/// Parses an embedded catalog: `name` is only for the message of a test
/// that finds it broken.
pub fn parse<T: Embedded>(name: &str, text: &str) -> T {
    let table =
        DeTable::parse(text).unwrap_or_else(|e| panic!("embedded catalog {name} is invalid: {e}"));
    T::read(&DeValue::Table(table.into_inner()))
        .unwrap_or_else(|e| panic!("embedded catalog {name} is invalid: {e}"))
}

/// A table's fields, for a type's `read`: `of` refuses a key not in
/// `names`, `get` a missing one.
pub struct Fields<'a, 'i> {
    table: &'a DeTable<'i>,
}

impl<'a, 'i> Fields<'a, 'i> {
    pub fn of(v: &'a DeValue<'i>, names: &[&str]) -> Result<Fields<'a, 'i>, String> {
        let DeValue::Table(table) = v else {
            return Err(format!("expected a table with {}", names.join(", ")));
        };
        if let Some((k, _)) = table
            .iter()
            .find(|(k, _)| !names.contains(&k.get_ref().as_ref()))
        {
            return Err(format!(
                "unknown field `{}`, expected one of {}",
                k.get_ref(),
                names.join(", ")
            ));
        }
        Ok(Fields { table })
    }

    // Out of line: called once per field of every type, inlined it was
    // most of each type's reader.
    #[inline(never)]
    fn value(&self, name: &str) -> Option<&'a DeValue<'i>> {
        self.table
            .iter()
            .find(|(k, _)| k.get_ref() == name)
            .map(|(_, v)| v.get_ref())
    }

    /// A field that must be there.
    #[inline(never)]
    pub fn get<T: Embedded>(&self, name: &str) -> Result<T, String> {
        self.opt(name)?
            .ok_or_else(|| format!("missing field `{name}`"))
    }

    /// A field that may be missing (`Option`).
    #[inline(never)]
    pub fn opt<T: Embedded>(&self, name: &str) -> Result<Option<T>, String> {
        self.value(name)
            .map(|v| T::read(v).map_err(|e| at_field(name, e)))
            .transpose()
    }

    /// A field that is its type's default when missing (`#[serde(default)]`).
    #[inline(never)]
    pub fn or_default<T: Embedded + Default>(&self, name: &str) -> Result<T, String> {
        Ok(self.opt(name)?.unwrap_or_default())
    }
}

/// A field's error, with its name.
#[inline(never)]
fn at_field(name: &str, e: String) -> String {
    format!("{name}: {e}")
}

impl Embedded for String {
    fn read(v: &DeValue<'_>) -> Result<Self, String> {
        match v {
            DeValue::String(s) => Ok(s.to_string()),
            _ => Err("expected a string".into()),
        }
    }
}

impl Embedded for bool {
    fn read(v: &DeValue<'_>) -> Result<Self, String> {
        match v {
            DeValue::Boolean(b) => Ok(*b),
            _ => Err("expected a boolean".into()),
        }
    }
}

/// A non-negative integer (as u64, then narrowed by the caller's type).
fn integer(v: &DeValue<'_>) -> Result<u64, String> {
    match v {
        DeValue::Integer(i) => u64::from_str_radix(i.as_str(), i.radix())
            .map_err(|_| "expected an unsigned integer".into()),
        _ => Err("expected an integer".into()),
    }
}

macro_rules! embedded_uint {
    ($($t:ty),*) => {$(
        impl Embedded for $t {
            fn read(v: &DeValue<'_>) -> Result<Self, String> {
                <$t>::try_from(integer(v)?).map_err(|_| concat!("out of range of ", stringify!($t)).into())
            }
        }
    )*};
}
embedded_uint!(u8, u32, u64, usize);

impl<T: Embedded> Embedded for Vec<T> {
    fn read(v: &DeValue<'_>) -> Result<Self, String> {
        let DeValue::Array(a) = v else {
            return Err("expected an array".into());
        };
        let mut out = Vec::with_capacity(a.len());
        for (i, x) in a.iter().enumerate() {
            out.push(T::read(x.get_ref()).map_err(|e| at_index(i, e))?);
        }
        Ok(out)
    }
}

/// An element's error, with where it is.
#[inline(never)]
fn at_index(i: usize, e: String) -> String {
    format!("[{i}]: {e}")
}

/// A unit enum read from its name, as `#[serde(rename_all = …)]` names it:
/// `embedded_enum!(Protocol { "ssh" => Ssh, "gpg" => Gpg });`
#[macro_export]
macro_rules! embedded_enum {
    ($t:ty { $($name:literal => $variant:ident),* $(,)? }) => {
        impl $crate::util::embedded::Embedded for $t {
            fn read(v: &toml::de::DeValue<'_>) -> Result<Self, String> {
                let s = <String as $crate::util::embedded::Embedded>::read(v)?;
                match s.as_str() {
                    $($name => Ok(<$t>::$variant),)*
                    other => Err(format!(
                        "unknown variant `{other}`, expected one of {}",
                        [$($name),*].join(", ")
                    )),
                }
            }
        }
    };
}

/// A struct read field by field, the fields grouped by how they are read:
/// `get` (must be there), `opt` (an `Option`), `or_default`
/// (`#[serde(default)]`); a field's key is its name unless one is given:
/// `embedded_struct!(Pointer { get [var, as_rule = "as"] opt [note] });`
#[macro_export]
macro_rules! embedded_struct {
    ($t:ident { $($mode:ident [$($field:ident $(= $name:literal)?),* $(,)?])* }) => {
        impl $crate::util::embedded::Embedded for $t {
            fn read(v: &toml::de::DeValue<'_>) -> Result<Self, String> {
                let f = $crate::util::embedded::Fields::of(
                    v,
                    &[$($($crate::embedded_key!($field $($name)?),)*)*],
                )?;
                Ok($t { $($($field: f.$mode($crate::embedded_key!($field $($name)?))?,)*)* })
            }
        }
    };
}

/// The key of a field of `embedded_struct!`: the one given, else the
/// field's own name.
#[doc(hidden)]
#[macro_export]
macro_rules! embedded_key {
    ($field:ident) => {
        stringify!($field)
    };
    ($field:ident $name:literal) => {
        $name
    };
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// The serde reading the catalogs had (through a JSON value), for the
    /// tests that hold `Embedded` to it.
    pub fn by_serde<T: serde::de::DeserializeOwned>(text: &str) -> T {
        let table = DeTable::parse(text).unwrap();
        serde_json::from_value(json_of(&DeValue::Table(table.into_inner()))).unwrap()
    }

    /// A TOML value as the JSON value `serde_json::to_value(toml::Value)`
    /// made of it.
    fn json_of(v: &DeValue<'_>) -> serde_json::Value {
        use serde_json::Value as J;
        match v {
            DeValue::String(s) => J::String(s.to_string()),
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                .map(J::from)
                .unwrap_or(J::Null),
            DeValue::Float(f) => f.as_str().parse::<f64>().map(J::from).unwrap_or(J::Null),
            DeValue::Boolean(b) => J::Bool(*b),
            DeValue::Datetime(d) => {
                serde_json::json!({ "$__toml_private_datetime": d.to_string() })
            }
            DeValue::Array(a) => J::Array(a.iter().map(|x| json_of(x.get_ref())).collect()),
            DeValue::Table(t) => J::Object(
                t.iter()
                    .map(|(k, x)| (k.get_ref().to_string(), json_of(x.get_ref())))
                    .collect(),
            ),
        }
    }

    /// Both readings of an embedded catalog, as Debug text: they must be
    /// the same.
    pub fn same<T: Embedded + serde::de::DeserializeOwned + std::fmt::Debug>(
        name: &str,
        text: &str,
    ) {
        let ours: T = parse(name, text);
        let theirs: T = by_serde(text);
        assert_eq!(format!("{ours:#?}"), format!("{theirs:#?}"), "{name}");
    }

    #[derive(Debug, serde::Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct T1 {
        a: String,
        #[serde(default)]
        n: Vec<u32>,
        o: Option<bool>,
    }

    impl Embedded for T1 {
        fn read(v: &DeValue<'_>) -> Result<Self, String> {
            let f = Fields::of(v, &["a", "n", "o"])?;
            Ok(T1 {
                a: f.get("a")?,
                n: f.or_default("n")?,
                o: f.opt("o")?,
            })
        }
    }

    #[test]
    fn reads_as_serde_read_and_refuses_what_it_refused() {
        same::<T1>("t", "a = \"x\"\nn = [1, 2]\n");
        same::<T1>("t", "a = \"x\"\no = true\n");
        let bad = |text: &str| {
            let t = DeTable::parse(text).unwrap();
            T1::read(&DeValue::Table(t.into_inner())).unwrap_err()
        };
        assert!(bad("b = 1\na = \"x\"\n").contains("unknown field `b`"));
        assert!(bad("n = []\n").contains("missing field `a`"));
        assert!(bad("a = 1\n").contains("expected a string"));
        assert!(bad("a = \"x\"\nn = [-1]\n").contains("n: [0]: expected an unsigned"));
    }
}
