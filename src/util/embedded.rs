//! The embedded catalogs (probes/*.toml) as typed data.

/// Parses an embedded catalog (probes/*.toml, compiled in and checked by the
/// tests). Through toml's parse tree and a JSON value rather than straight
/// into `T`: serde's TOML deserializer is instantiated once per target type,
/// about 7 KiB each, and the catalogs' types made that 0.2 MB of the binary;
/// the JSON one, already linked for reports, costs far less per type. The
/// tree becomes JSON by hand (`json_of`), with no serde over TOML at all.
pub fn parse<T: serde::de::DeserializeOwned>(name: &str, text: &str) -> T {
    let table = toml::de::DeTable::parse(text)
        .unwrap_or_else(|e| panic!("embedded catalog {name} is invalid: {e}"));
    serde_json::from_value(json_of(&toml::de::DeValue::Table(table.into_inner())))
        .unwrap_or_else(|e| panic!("embedded catalog {name} is invalid: {e}"))
}

/// A TOML value as the JSON value `serde_json::to_value(toml::Value)` made
/// of it (a datetime as toml's one-key map).
fn json_of(v: &toml::de::DeValue<'_>) -> serde_json::Value {
    use serde_json::Value as J;
    use toml::de::DeValue as T;
    match v {
        T::String(s) => J::String(s.to_string()),
        T::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
            .map(J::from)
            .unwrap_or(J::Null),
        T::Float(f) => f.as_str().parse::<f64>().map(J::from).unwrap_or(J::Null),
        T::Boolean(b) => J::Bool(*b),
        T::Datetime(d) => serde_json::json!({ "$__toml_private_datetime": d.to_string() }),
        T::Array(a) => J::Array(a.iter().map(|x| json_of(x.get_ref())).collect()),
        T::Table(t) => J::Object(
            t.iter()
                .map(|(k, x)| (k.get_ref().to_string(), json_of(x.get_ref())))
                .collect(),
        ),
    }
}
