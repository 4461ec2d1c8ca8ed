//! A certificate's subject and issuer as RFC 4514 strings, the only part
//! of X.509 the checks read (evidence of who presented a certificate: how
//! TLS interception shows). x509-cert, which did this before, parsed the
//! whole certificate and carried const-oid's table of every OID's names: 0.1
//! MB of the shipped binary with `der` (bench/RESULTS.md, "Size, issue
//! 24"). The strings are x509-cert's, checked against it by the tests: the
//! attribute names are its shortest names, upper-cased, for the attribute
//! types of X.520 (2.5.4), COSINE (0.9.2342.19200300.100.1) and PKCS#9
//! (1.2.840.113549.1.9); an attribute of any other type is written as its
//! OID and the hex of its value, as x509-cert wrote one it had no name for.
//! The certificate's outer structure is checked as far as the names; what
//! follows them (the key, the extensions) is not parsed, so a certificate
//! x509-cert refused for a field no check reads now shows its names.

use std::fmt::Write;

use crate::util::der::{self, Der};

/// Subject and issuer of a DER certificate, each cut to 512 characters.
pub fn names(cert: &[u8]) -> Option<(String, String)> {
    let mut outer = Der::new(cert);
    let mut c = Der::new(outer.expect(der::SEQUENCE)?);
    let mut tbs = Der::new(c.expect(der::SEQUENCE)?);
    c.expect(der::SEQUENCE)?;
    c.expect(der::BIT_STRING)?;
    if !c.is_empty() || !outer.is_empty() {
        return None;
    }
    // [0] EXPLICIT version, serial, signature algorithm, issuer, validity,
    // subject.
    tbs.optional(0xa0);
    tbs.expect(der::INTEGER)?;
    tbs.expect(der::SEQUENCE)?;
    let issuer = name(tbs.expect(der::SEQUENCE)?)?;
    tbs.expect(der::SEQUENCE)?;
    let subject = name(tbs.expect(der::SEQUENCE)?)?;
    let clip = |s: String| s.chars().take(512).collect::<String>();
    Some((clip(subject), clip(issuer)))
}

/// An RDNSequence's content, most significant last (RFC 4514 2.1).
fn name(content: &[u8]) -> Option<String> {
    let mut rdns = Vec::new();
    let mut seq = Der::new(content);
    while !seq.is_empty() {
        let mut set = Der::new(seq.expect(der::SET)?);
        let mut atvs: Vec<(&[u8], String)> = Vec::new();
        while !set.is_empty() {
            let (tag, atv, whole) = set.tlv()?;
            if tag != der::SEQUENCE {
                return None;
            }
            atvs.push((whole, attribute(atv)?));
        }
        // A SET OF in DER order, as `der` put it (a duplicate refused).
        crate::util::sort::sort_by(&mut atvs, |a, b| a.0.cmp(b.0));
        if atvs.windows(2).any(|w| w[0].0 == w[1].0) {
            return None;
        }
        let rdn: Vec<String> = atvs.into_iter().map(|(_, s)| s).collect();
        rdns.push(rdn.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

/// One AttributeTypeAndValue: `CN=value` with RFC 4514's escapes, or the
/// OID and the value's DER in hex.
fn attribute(content: &[u8]) -> Option<String> {
    let mut atv = Der::new(content);
    let oid = der::oid_string(atv.expect(der::OID)?)?;
    let (tag, value, whole) = atv.tlv()?;
    if !atv.is_empty() {
        return None;
    }
    let text = match tag {
        // PrintableString, in its character set.
        0x13 if value
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || b" '()+,-./:=?".contains(&c)) =>
        {
            std::str::from_utf8(value).ok()
        }
        0x0c => std::str::from_utf8(value).ok(),
        // IA5String, TeletexString: ASCII only.
        0x16 | 0x14 if value.is_ascii() => std::str::from_utf8(value).ok(),
        _ => None,
    };
    let mut out = String::new();
    match (attribute_name(&oid), text) {
        (Some(key), Some(val)) => {
            out.push_str(key);
            out.push('=');
            let mut chars = val.char_indices().peekable();
            while let Some((i, c)) = chars.next() {
                match c {
                    '#' if i == 0 => out.push_str("\\#"),
                    ' ' if i == 0 || chars.peek().is_none() => out.push_str("\\ "),
                    '"' | '+' | ',' | ';' | '<' | '>' | '\\' => {
                        out.push('\\');
                        out.push(c);
                    }
                    '\x00'..='\x1f' | '\x7f' => {
                        let _ = write!(out, "\\{:02x}", c as u8);
                    }
                    _ => out.push(c),
                }
            }
        }
        _ => {
            out.push_str(&oid);
            out.push_str("=#");
            out.push_str(&crate::util::codec::hex(whole));
        }
    }
    Some(out)
}

/// The attribute types x509-cert named, with its names (const-oid's
/// shortest, upper-cased).
const NAMES: &str = "\
2.5.4.0 OBJECTCLASS\n\
2.5.4.1 ALIASEDOBJECTNAME\n\
2.5.4.2 KNOWLEDGEINFORMATION\n\
2.5.4.3 CN\n\
2.5.4.4 SN\n\
2.5.4.5 SERIALNUMBER\n\
2.5.4.6 C\n\
2.5.4.7 L\n\
2.5.4.8 ST\n\
2.5.4.9 STREET\n\
2.5.4.10 O\n\
2.5.4.11 OU\n\
2.5.4.12 TITLE\n\
2.5.4.13 DESCRIPTION\n\
2.5.4.14 SEARCHGUIDE\n\
2.5.4.15 BUSINESSCATEGORY\n\
2.5.4.16 POSTALADDRESS\n\
2.5.4.17 POSTALCODE\n\
2.5.4.18 POSTOFFICEBOX\n\
2.5.4.19 PHYSICALDELIVERYOFFICENAME\n\
2.5.4.20 TELEPHONENUMBER\n\
2.5.4.21 TELEXNUMBER\n\
2.5.4.22 TELETEXTERMINALIDENTIFIER\n\
2.5.4.23 FACSIMILETELEPHONENUMBER\n\
2.5.4.24 X121ADDRESS\n\
2.5.4.25 INTERNATIONALISDNNUMBER\n\
2.5.4.26 REGISTEREDADDRESS\n\
2.5.4.27 DESTINATIONINDICATOR\n\
2.5.4.28 PREFERREDDELIVERYMETHOD\n\
2.5.4.29 PRESENTATIONADDRESS\n\
2.5.4.30 SUPPORTEDAPPLICATIONCONTEXT\n\
2.5.4.31 MEMBER\n\
2.5.4.32 OWNER\n\
2.5.4.33 ROLEOCCUPANT\n\
2.5.4.34 SEEALSO\n\
2.5.4.35 USERPASSWORD\n\
2.5.4.36 USERCERTIFICATE\n\
2.5.4.37 CACERTIFICATE\n\
2.5.4.38 AUTHORITYREVOCATIONLIST\n\
2.5.4.39 CERTIFICATEREVOCATIONLIST\n\
2.5.4.40 CROSSCERTIFICATEPAIR\n\
2.5.4.41 NAME\n\
2.5.4.42 GIVENNAME\n\
2.5.4.43 INITIALS\n\
2.5.4.44 GENERATIONQUALIFIER\n\
2.5.4.45 X500UNIQUEIDENTIFIER\n\
2.5.4.46 DNQUALIFIER\n\
2.5.4.47 ENHANCEDSEARCHGUIDE\n\
2.5.4.48 PROTOCOLINFORMATION\n\
2.5.4.49 DISTINGUISHEDNAME\n\
2.5.4.50 UNIQUEMEMBER\n\
2.5.4.51 HOUSEIDENTIFIER\n\
2.5.4.52 SUPPORTEDALGORITHMS\n\
2.5.4.53 DELTAREVOCATIONLIST\n\
2.5.4.54 DMDNAME\n\
2.5.4.65 PSEUDONYM\n\
2.5.4.72 ID-AT-ROLE\n\
0.9.2342.19200300.100.1.1 UID\n\
0.9.2342.19200300.100.1.2 TEXTENCODEDORADDRESS\n\
0.9.2342.19200300.100.1.3 MAIL\n\
0.9.2342.19200300.100.1.4 INFO\n\
0.9.2342.19200300.100.1.5 DRINK\n\
0.9.2342.19200300.100.1.6 ROOMNUMBER\n\
0.9.2342.19200300.100.1.7 PHOTO\n\
0.9.2342.19200300.100.1.8 USERCLASS\n\
0.9.2342.19200300.100.1.9 HOST\n\
0.9.2342.19200300.100.1.10 MANAGER\n\
0.9.2342.19200300.100.1.11 DOCUMENTIDENTIFIER\n\
0.9.2342.19200300.100.1.12 DOCUMENTTITLE\n\
0.9.2342.19200300.100.1.13 DOCUMENTVERSION\n\
0.9.2342.19200300.100.1.14 DOCUMENTAUTHOR\n\
0.9.2342.19200300.100.1.15 DOCUMENTLOCATION\n\
0.9.2342.19200300.100.1.20 HOMEPHONE\n\
0.9.2342.19200300.100.1.21 SECRETARY\n\
0.9.2342.19200300.100.1.22 OTHERMAILBOX\n\
0.9.2342.19200300.100.1.23 LASTMODIFIEDTIME\n\
0.9.2342.19200300.100.1.24 LASTMODIFIEDBY\n\
0.9.2342.19200300.100.1.25 DC\n\
0.9.2342.19200300.100.1.26 ARECORD\n\
0.9.2342.19200300.100.1.27 MDRECORD\n\
0.9.2342.19200300.100.1.28 MXRECORD\n\
0.9.2342.19200300.100.1.29 NSRECORD\n\
0.9.2342.19200300.100.1.30 SOARECORD\n\
0.9.2342.19200300.100.1.31 CNAMERECORD\n\
0.9.2342.19200300.100.1.37 ASSOCIATEDDOMAIN\n\
0.9.2342.19200300.100.1.38 ASSOCIATEDNAME\n\
0.9.2342.19200300.100.1.39 HOMEPOSTALADDRESS\n\
0.9.2342.19200300.100.1.40 PERSONALTITLE\n\
0.9.2342.19200300.100.1.41 MOBILE\n\
0.9.2342.19200300.100.1.42 PAGER\n\
0.9.2342.19200300.100.1.43 CO\n\
0.9.2342.19200300.100.1.44 UNIQUEIDENTIFIER\n\
0.9.2342.19200300.100.1.45 ORGANIZATIONALSTATUS\n\
0.9.2342.19200300.100.1.46 JANETMAILBOX\n\
0.9.2342.19200300.100.1.47 MAILPREFERENCEOPTION\n\
0.9.2342.19200300.100.1.48 BUILDINGNAME\n\
0.9.2342.19200300.100.1.49 DSAQUALITY\n\
0.9.2342.19200300.100.1.50 SINGLELEVELQUALITY\n\
0.9.2342.19200300.100.1.51 SUBTREEMINIMUMQUALITY\n\
0.9.2342.19200300.100.1.52 SUBTREEMAXIMUMQUALITY\n\
0.9.2342.19200300.100.1.53 PERSONALSIGNATURE\n\
0.9.2342.19200300.100.1.54 DITREDIRECT\n\
0.9.2342.19200300.100.1.55 AUDIO\n\
0.9.2342.19200300.100.1.56 DOCUMENTPUBLISHER\n\
0.9.2342.19200300.100.1.60 JPEGPHOTO\n\
1.2.840.113549.1.9.1 EMAIL\n\
1.2.840.113549.1.9.3 ID-CONTENTTYPE\n\
1.2.840.113549.1.9.4 ID-MESSAGEDIGEST\n\
1.2.840.113549.1.9.5 ID-SIGNINGTIME\n\
1.2.840.113549.1.9.6 ID-COUNTERSIGNATURE\n\
1.2.840.113549.1.9.14 ID-EXTENSIONREQ\n\
1.2.840.113549.1.9.15 SMIMECAPABILITIES\n\
1.2.840.113549.1.9.16 ID-SMIME";

fn attribute_name(oid: &str) -> Option<&'static str> {
    NAMES
        .lines()
        .find_map(|l| l.split_once(' ').filter(|(o, _)| *o == oid))
        .map(|(_, n)| n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use x509_cert::der::{Decode, Encode};

    fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        match content.len() {
            n if n < 0x80 => v.push(n as u8),
            n if n < 0x100 => v.extend([0x81, n as u8]),
            n => v.extend([0x82, (n >> 8) as u8, n as u8]),
        }
        v.extend_from_slice(content);
        v
    }

    fn oid(dotted: &str) -> Vec<u8> {
        x509_cert::der::asn1::ObjectIdentifier::new_unwrap(dotted)
            .to_der()
            .unwrap()
    }

    /// An RDNSequence of the given RDNs, each a list of (OID, value TLV).
    fn rdn_sequence(rdns: &[Vec<(Vec<u8>, Vec<u8>)>]) -> Vec<u8> {
        let mut seq = Vec::new();
        for rdn in rdns {
            let mut set = Vec::new();
            for (o, v) in rdn {
                set.extend(tlv(der::SEQUENCE, &[o.clone(), v.clone()].concat()));
            }
            seq.extend(tlv(der::SET, &set));
        }
        tlv(der::SEQUENCE, &seq)
    }

    fn theirs(name: &[u8]) -> Option<String> {
        x509_cert::name::Name::from_der(name)
            .ok()
            .map(|n| n.to_string())
    }

    fn ours(name: &[u8]) -> Option<String> {
        let mut d = Der::new(name);
        let content = d.expect(der::SEQUENCE)?;
        d.is_empty().then_some(())?;
        super::name(content)
    }

    #[test]
    fn names_are_x509_cert_s() {
        let mut oids: Vec<String> = Vec::new();
        for p in ["2.5.4", "0.9.2342.19200300.100.1", "1.2.840.113549.1.9"] {
            for i in 0..=100 {
                oids.push(format!("{p}.{i}"));
            }
        }
        oids.extend(["1.3.6.1.4.1.311.60.2.1.3", "1.2.3.4.5.6.7.8"].map(String::from));
        let values: Vec<Vec<u8>> = vec![
            tlv(0x13, b"Plain Value 1"),
            tlv(0x13, b"bad*printable"),
            tlv(0x0c, "héllo, wörld".as_bytes()),
            tlv(0x0c, b"#lead"),
            tlv(0x0c, b" both ends "),
            tlv(0x0c, b"a\"b+c,d;e<f>g\\h"),
            tlv(0x0c, b"ctl\x01\x1f\x7fend"),
            tlv(0x0c, b"\xff\xfe"),
            tlv(0x16, b"user@example.test"),
            tlv(0x16, b"hi\x80"),
            tlv(0x14, b"teletex"),
            tlv(0x14, b"tele\xe9"),
            tlv(0x1e, &[0, b'B', 0, b'M']),
            tlv(0x02, &[1]),
            tlv(0x04, b"octets"),
            tlv(0x0c, b""),
        ];
        let mut compared = 0;
        for o in &oids {
            for v in &values {
                let name = rdn_sequence(&[vec![(oid(o), v.clone())]]);
                assert_eq!(ours(&name), theirs(&name), "{o} {v:02x?}");
                compared += 1;
            }
        }
        // Several RDNs (shown most significant last) and a multi-valued RDN
        // (its values in DER order, whatever order they came in).
        let cn = (oid("2.5.4.3"), tlv(0x0c, b"leaf"));
        let o = (oid("2.5.4.10"), tlv(0x13, b"Org"));
        let c = (oid("2.5.4.6"), tlv(0x13, b"DE"));
        let uid = (oid("0.9.2342.19200300.100.1.1"), tlv(0x0c, b"u1"));
        for rdns in [
            vec![vec![c.clone()], vec![o.clone()], vec![cn.clone()]],
            vec![vec![cn.clone(), uid.clone()]],
            vec![vec![uid.clone(), cn.clone()]],
            vec![vec![o.clone(), o.clone()]],
            vec![vec![]],
            vec![],
        ] {
            let name = rdn_sequence(&rdns);
            assert_eq!(ours(&name), theirs(&name), "{rdns:02x?}");
            compared += 1;
        }
        assert!(compared > 4000);
        // Where they differ, on purpose: a type outside X.520, COSINE and
        // PKCS#9 that const-oid names (subjectAltName's OID, in a name) is
        // shown by its OID, which x509-cert named.
        let san = rdn_sequence(&[vec![(oid("2.5.29.17"), tlv(0x13, b"x"))]]);
        assert_eq!(theirs(&san).as_deref(), Some("ID-CE-SUBJECTALTNAME=x"));
        assert_eq!(ours(&san).as_deref(), Some("2.5.29.17=#130178"));
    }

    #[test]
    fn a_certificate_s_names() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["proxy.corp.test".into()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "Corp TLS Inspection, Inc.");
        params
            .distinguished_name
            .push(rcgen::DnType::OrganizationName, "Corp");
        let cert = params.self_signed(&key).unwrap();
        let der = cert.der();
        let c = x509_cert::Certificate::from_der(der).unwrap();
        assert_eq!(
            names(der),
            Some((
                c.tbs_certificate.subject.to_string(),
                c.tbs_certificate.issuer.to_string()
            ))
        );
        assert_eq!(
            names(der).unwrap().0,
            "O=Corp,CN=Corp TLS Inspection\\, Inc."
        );
        assert_eq!(names(&der[..der.len() - 1]), None);
        assert_eq!(names(b"not a certificate"), None);
    }
}
