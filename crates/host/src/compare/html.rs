//! `summary --format html`: one self-contained page for a platform team. A
//! grid of workspaces against the eight scorecard controls, coloured by
//! score, with the worst severity, the teardown result and the verification
//! mark; ordered worst-first, sortable by any column; a row opens to its
//! findings grouped by code, each with its fix. Light and dark follow the
//! reader's system setting.
//!
//! Nothing is fetched: styles and one small script are inline, and a
//! Content-Security-Policy allows only that script (by its hash), so a
//! workspace name that slipped through escaping still could not run. Every
//! string from an input is escaped for HTML after the one sanitiser has made
//! its invisible and bidi characters visible. Without the script the page
//! still reads: every row is shown open.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use super::render::short;
use super::summary::{Fleet, Workspace};
use selfprobe::finding::{code_info, Severity};
use selfprobe::scorecard::CONTROLS;

/// Text for HTML: hazards shown as `\u{..}` first (the one sanitiser),
/// then the markup characters escaped as for XML (`&apos;` is HTML5 too).
/// Safe in element content and in quoted attributes.
pub fn esc(s: &str) -> String {
    selfprobe::report::junit::xml_text(s)
}

const STYLE: &str = r#"
:root{--bg:#f6f7f9;--card:#fff;--fg:#1c2026;--muted:#5d6773;--line:#dde1e6;--head:#eef0f3;
--s2:#1f883d;--s2bg:#dafbe1;--s1:#9a6700;--s1bg:#fff4c2;--s0:#cf222e;--s0bg:#ffe3e0;--na:#6e7781;--nabg:#eceef1;
--crit:#8b0a1a;--high:#cf222e;--med:#bc4c00;--low:#9a6700;--info:#57606a;--ok:#1f883d;--bad:#cf222e;--focus:#0969da}
@media (prefers-color-scheme:dark){:root{--bg:#0f1216;--card:#161b22;--fg:#e6edf3;--muted:#9aa4b2;--line:#2d333b;--head:#1c222a;
--s2:#56d364;--s2bg:#12361f;--s1:#e3b341;--s1bg:#3a2e0b;--s0:#ff7b72;--s0bg:#4a1614;--na:#8b949e;--nabg:#21262d;
--crit:#ff9a9a;--high:#ff7b72;--med:#ffa657;--low:#e3b341;--info:#9aa4b2;--ok:#56d364;--bad:#ff7b72;--focus:#58a6ff}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",Ubuntu,Cantarell,sans-serif}
main{max-width:1400px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px;font-weight:650;letter-spacing:-.01em}
.meta{color:var(--muted);margin:0 0 16px}
.tiles{display:flex;flex-wrap:wrap;gap:10px;margin:0 0 16px}
.tile{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:10px 14px;min-width:130px}
.tile b{display:block;font-size:22px;font-variant-numeric:tabular-nums}
.tile span{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.legend{display:flex;flex-wrap:wrap;gap:14px;align-items:center;color:var(--muted);font-size:12.5px;margin:0 0 12px}
.legend .s{display:inline-block;width:auto;min-width:26px;padding:1px 6px;margin-right:4px}
.wrap{background:var(--card);border:1px solid var(--line);border-radius:12px;overflow:auto}
table{border-collapse:collapse;width:100%}
th{position:sticky;top:0;background:var(--head);text-align:left;font-size:11px;font-weight:650;color:var(--muted);
text-transform:uppercase;letter-spacing:.02em;padding:9px 6px;border-bottom:1px solid var(--line);cursor:pointer;user-select:none;vertical-align:bottom}
th.c{text-align:center;white-space:nowrap}
th[aria-sort=ascending]::after{content:" \25B2"}th[aria-sort=descending]::after{content:" \25BC"}
td{padding:8px 6px;border-bottom:1px solid var(--line);vertical-align:middle}
tr.row{cursor:pointer}tr.row:hover td{background:color-mix(in srgb,var(--head) 60%,transparent)}
tr.row:focus{outline:2px solid var(--focus);outline-offset:-2px}
td.name{font-weight:600;min-width:170px;max-width:320px;overflow-wrap:anywhere}
td.name small{display:block;font-weight:400;color:var(--muted);font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:11.5px}
.caret{display:inline-block;width:1em;color:var(--muted);transition:transform .15s}
tbody.open .caret{transform:rotate(90deg)}
td.bd{color:var(--muted);font-size:12.5px;min-width:120px;max-width:220px}
td.c{text-align:center;padding:6px 4px}
.s{display:inline-block;width:34px;padding:3px 0;border-radius:6px;font-weight:700;text-align:center;font-variant-numeric:tabular-nums}
.s2{color:var(--s2);background:var(--s2bg)}.s1{color:var(--s1);background:var(--s1bg)}.s0{color:var(--s0);background:var(--s0bg)}
.sn{color:var(--na);background:repeating-linear-gradient(45deg,var(--nabg),var(--nabg) 4px,transparent 4px,transparent 8px);border:1px dashed var(--line)}
.sev{display:inline-block;padding:1px 8px;border-radius:999px;font-size:12px;font-weight:650;border:1px solid currentColor;white-space:nowrap}
.sev-unknown{color:var(--na);border-style:dashed}.sev-critical{color:var(--crit)}.sev-high{color:var(--high)}.sev-medium{color:var(--med)}.sev-low{color:var(--low)}.sev-info,.sev-none{color:var(--info)}
.td{font-size:12.5px;font-weight:600}.td-gone,.td-retained{color:var(--ok)}.td-remains{color:var(--bad)}.td-unknown{color:var(--med)}.td-none{color:var(--muted);font-weight:400}
.v{font-weight:650;min-width:90px}.v.ok{color:var(--ok)}.v.no{color:var(--bad)}
tr.detail td{background:var(--bg);padding:14px 18px 18px 34px}
.problems{border-left:3px solid var(--bad);padding:6px 12px;margin:0 0 12px;background:var(--s0bg);border-radius:0 6px 6px 0}
.problems li,.notes li{overflow-wrap:anywhere}
.notes{color:var(--muted);font-size:12.5px;margin:0 0 10px}
.reasons{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:6px 18px;margin:0 0 14px;font-size:12.5px}
.reasons div{overflow-wrap:anywhere}.reasons b{font-weight:650}
.code{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px;margin:0 0 10px}
.code h4{margin:0 0 6px;font-size:13.5px;font-weight:600;display:flex;gap:8px;align-items:baseline;flex-wrap:wrap}
.code h4 code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12.5px}
.code h4 .n{color:var(--muted);font-weight:400}
.code ul{margin:0 0 6px;padding-left:18px}.code li{overflow-wrap:anywhere}
.code li i{color:var(--muted);font-style:normal}
.fix{margin:0;padding:6px 10px;border-radius:6px;background:var(--head);font-size:13px}
.fix b{font-weight:650}
.empty{color:var(--muted)}
.js tbody.ws tr.detail{display:none}.js tbody.ws.open tr.detail{display:table-row}
footer{color:var(--muted);font-size:12px;margin:16px 0 0}
button{font:inherit;font-size:12.5px;color:var(--fg);background:var(--card);border:1px solid var(--line);border-radius:6px;padding:3px 10px;cursor:pointer}
button:hover{border-color:var(--muted)}
"#;

/// Opens and closes rows, and sorts by a column (numbers from data-*
/// attributes the page itself wrote). No input reaches it.
const SCRIPT: &str = r#"(function(){var t=document.getElementById('fleet');if(!t)return;t.classList.add('js');
function tog(r){var o=r.getAttribute('aria-expanded')!=='true';r.setAttribute('aria-expanded',String(o));r.parentNode.classList.toggle('open',o);}
function sort(th){var k=th.getAttribute('data-key'),asc=th.getAttribute('aria-sort')!=='ascending';
t.querySelectorAll('th').forEach(function(h){h.removeAttribute('aria-sort');});th.setAttribute('aria-sort',asc?'ascending':'descending');
var b=[].slice.call(t.querySelectorAll('tbody.ws'));b.sort(function(x,y){var a=x.getAttribute('data-'+k),c=y.getAttribute('data-'+k);
var d=(k==='name')?a.localeCompare(c):(parseFloat(a)-parseFloat(c));return asc?d:-d;});b.forEach(function(e){t.appendChild(e);});}
t.addEventListener('click',function(e){var h=e.target.closest('th[data-key]');if(h){sort(h);return;}var r=e.target.closest('tr.row');if(r)tog(r);});
t.addEventListener('keydown',function(e){if((e.key==='Enter'||e.key===' ')&&e.target.matches('tr.row')){e.preventDefault();tog(e.target);}});
var all=document.getElementById('all');function setAll(o){t.querySelectorAll('tr.row').forEach(function(r){r.setAttribute('aria-expanded',String(o));r.parentNode.classList.toggle('open',o);});all.textContent=o?'Close all':'Open all';}
if(all){all.hidden=false;all.addEventListener('click',function(){setAll(all.textContent==='Open all');});if(location.hash==='#open')setAll(true);}})();"#;

fn sev_rank(s: Option<Severity>) -> u8 {
    s.map(|s| s as u8 + 1).unwrap_or(0)
}

/// Worst first: not verified, then by exit code, worst severity, and the
/// lowest scorecard total.
fn badness(w: &Workspace) -> (u8, u8, u8, u64) {
    let total: u64 = w.controls.iter().map(|c| c.score.unwrap_or(0) as u64).sum();
    (
        u8::from(!w.verified),
        w.exit as u8,
        sev_rank(w.worst),
        16u64.saturating_sub(total),
    )
}

fn score_cell(s: Option<u8>, name: &str, reason: &str) -> String {
    let (cls, txt) = match s {
        Some(2) => ("s2", "2"),
        Some(1) => ("s1", "1"),
        Some(_) => ("s0", "0"),
        None => ("sn", "–"),
    };
    let tip = if reason.is_empty() {
        format!("{name}: not known (no verified report)")
    } else {
        format!("{name}: {reason}")
    };
    format!(
        "<td class=\"c\"><span class=\"s {cls}\" title=\"{}\">{txt}</span></td>",
        esc(&tip)
    )
}

fn t<'a>(f: &'a Value, k: &str) -> &'a str {
    f.get(k).and_then(Value::as_str).unwrap_or("")
}

fn findings_html(w: &Workspace, out: &mut String) {
    if w.findings.is_empty() {
        out.push_str("<p class=\"empty\">No findings to show.</p>");
        return;
    }
    let mut by_code: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for f in &w.findings {
        by_code.entry(t(f, "code")).or_default().push(f);
    }
    let mut codes: Vec<(&str, Vec<&Value>)> = by_code.into_iter().collect();
    let sev_of = |fs: &Vec<&Value>| {
        fs.iter()
            .filter_map(|f| t(f, "severity").parse::<Severity>().ok())
            .max()
    };
    selfprobe::util::sort::sort_by(&mut codes, |a, b| {
        sev_of(&b.1).cmp(&sev_of(&a.1)).then(a.0.cmp(b.0))
    });
    for (code, fs) in codes {
        let sev = sev_of(&fs).map(|s| s.as_str()).unwrap_or("info");
        let title = fs
            .iter()
            .map(|f| t(f, "title"))
            .find(|x| !x.is_empty())
            .or_else(|| code_info(code).map(|c| c.title.as_str()))
            .unwrap_or("");
        let _ = write!(
            out,
            "<div class=\"code\"><h4><span class=\"sev sev-{sev}\">{sev}</span><code>{}</code><span>{}</span><span class=\"n\">× {}</span></h4><ul>",
            esc(code),
            esc(title),
            fs.len()
        );
        for f in fs.iter().take(50) {
            let st = t(f, "status");
            let tag = match st {
                "excepted" => " <i>(excepted)</i>",
                "unknown" => " <i>(could not check)</i>",
                _ => "",
            };
            let _ = write!(
                out,
                "<li><b>{}</b> — {}{tag}</li>",
                esc(t(f, "subject")),
                esc(t(f, "message"))
            );
        }
        if fs.len() > 50 {
            let _ = write!(out, "<li><i>… and {} more</i></li>", fs.len() - 50);
        }
        out.push_str("</ul>");
        let fix = fs
            .iter()
            .map(|f| t(f, "remediation"))
            .find(|x| !x.is_empty())
            .or_else(|| code_info(code).map(|c| c.remediation.as_str()))
            .unwrap_or("");
        if !fix.is_empty() {
            let _ = write!(out, "<p class=\"fix\"><b>Fix:</b> {}</p>", esc(fix));
        }
        out.push_str("</div>");
    }
}

fn row(w: &Workspace, out: &mut String) {
    let total: u64 = w.controls.iter().map(|c| c.score.unwrap_or(0) as u64).sum();
    let b = badness(w);
    let rank = (b.0 as u64) * 1_000_000 + (b.1 as u64) * 10_000 + (b.2 as u64) * 100 + b.3;
    let _ = write!(
        out,
        "<tbody class=\"ws\" data-name=\"{}\" data-rank=\"{rank}\" data-total=\"{total}\" data-worst=\"{}\" data-verified=\"{}\"",
        esc(&w.name),
        sev_rank(w.worst),
        u8::from(w.verified)
    );
    for (i, c) in w.controls.iter().enumerate() {
        let _ = write!(
            out,
            " data-c{i}=\"{}\"",
            c.score.map(|s| s as i32).unwrap_or(-1)
        );
    }
    out.push('>');
    let run = w
        .run_id
        .as_deref()
        .map(|r| format!("run {r}"))
        .unwrap_or_default();
    let _ = write!(
        out,
        "<tr class=\"row\" tabindex=\"0\" aria-expanded=\"false\"><td class=\"name\"><span class=\"caret\">▸</span>{}<small>{}</small></td><td class=\"bd\">{}</td>",
        esc(&w.name),
        esc(&run),
        esc(w.boundary.as_deref().unwrap_or("unknown"))
    );
    for (c, cell) in CONTROLS.iter().zip(&w.controls) {
        out.push_str(&score_cell(cell.score, c.name, &cell.reason));
    }
    let sev = match w.worst {
        Some(s) => s.as_str(),
        None if w.has_content => "none",
        None => "unknown",
    };
    let td = w.teardown_result.as_deref().unwrap_or("none");
    let td_cls = match td {
        "gone" | "retained" | "remains" | "unknown" => td,
        _ => "none",
    };
    let td_text = if td == "none" { "—" } else { td };
    let v = if w.verified {
        "<td class=\"v ok\" title=\"".to_string() + &esc(&w.verification()) + "\">✓ verified</td>"
    } else {
        "<td class=\"v no\" title=\"".to_string()
            + &esc(&w.verification())
            + "\">✗ not verified</td>"
    };
    let _ = write!(
        out,
        "<td><span class=\"sev sev-{sev}\">{sev}</span></td><td><span class=\"td td-{td_cls}\">{}</span></td>{v}</tr>",
        esc(td_text)
    );
    let _ = write!(
        out,
        "<tr class=\"detail\"><td colspan=\"{}\">",
        CONTROLS.len() + 5
    );
    if !w.problems.is_empty() {
        out.push_str("<div class=\"problems\"><b>Not verified</b><ul>");
        for p in &w.problems {
            let _ = write!(out, "<li>{}</li>", esc(p));
        }
        out.push_str("</ul></div>");
    }
    let reasons: Vec<String> = CONTROLS
        .iter()
        .zip(&w.controls)
        .filter(|(_, c)| !c.reason.is_empty())
        .map(|(k, c)| {
            format!(
                "<div><b>{}</b> {}: {}</div>",
                esc(k.name),
                esc(&super::render::score_text(c.score)),
                esc(&c.reason)
            )
        })
        .collect();
    if !reasons.is_empty() {
        let _ = write!(out, "<div class=\"reasons\">{}</div>", reasons.join(""));
    }
    findings_html(w, out);
    if !w.notes.is_empty() {
        out.push_str("<ul class=\"notes\">");
        for n in &w.notes {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul>");
    }
    let _ = write!(
        out,
        "<p class=\"notes\">Source: {}</p></td></tr></tbody>",
        esc(&w.source)
    );
}

pub fn render(f: &Fleet) -> String {
    let mut ws: Vec<&Workspace> = f.workspaces.iter().collect();
    selfprobe::util::sort::sort_by(&mut ws, |a, b| {
        badness(b).cmp(&badness(a)).then(a.name.cmp(&b.name))
    });
    let n = ws.len();
    let verified = f.verified();
    let hash =
        selfprobe::util::codec::b64_encode(&selfprobe::util::digest::sha256(SCRIPT.as_bytes()));
    let mut out = String::with_capacity(16_384 + n * 4096);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{hash}'; base-uri 'none'; form-action 'none'\">\
<meta name=\"referrer\" content=\"no-referrer\">\
<title>selfprobe fleet: {n} workspace(s)</title><style>{STYLE}</style></head><body><main>"
    );
    let _ = write!(
        out,
        "<h1>Workspace fleet</h1><p class=\"meta\">{n} workspace(s) · {verified} verified · {} not verified · exit {} · selfprobe {}</p>",
        n - verified,
        f.exit as i32,
        env!("CARGO_PKG_VERSION")
    );
    let count = |s: Option<Severity>| f.workspaces.iter().filter(|w| w.worst == s).count();
    let _ = write!(
        out,
        "<div class=\"tiles\"><div class=\"tile\"><span>verified</span><b>{verified} / {n}</b></div>\
<div class=\"tile\"><span>worst critical</span><b>{}</b></div><div class=\"tile\"><span>worst high</span><b>{}</b></div>\
<div class=\"tile\"><span>worst medium or lower</span><b>{}</b></div><div class=\"tile\"><span>teardown remains</span><b>{}</b></div></div>",
        count(Some(Severity::Critical)),
        count(Some(Severity::High)),
        f.workspaces
            .iter()
            .filter(|w| w.has_content && w.worst < Some(Severity::High))
            .count(),
        f.workspaces
            .iter()
            .filter(|w| w.teardown_result.as_deref() == Some("remains"))
            .count()
    );
    out.push_str(
        "<div class=\"legend\"><span><span class=\"s s2\">2</span>the recommended boundary holds</span>\
<span><span class=\"s s1\">1</span>partly controlled</span><span><span class=\"s s0\">0</span>the danger signal is present</span>\
<span><span class=\"s sn\">–</span>not assessed or not known</span><span>Ordered worst first; click a heading to sort, a row to open its findings.</span><button id=\"all\" type=\"button\" hidden>Open all</button></div>",
    );
    out.push_str("<div class=\"wrap\"><table id=\"fleet\"><thead><tr><th data-key=\"name\">Workspace</th><th>Boundary</th>");
    for (i, c) in CONTROLS.iter().enumerate() {
        let _ = write!(
            out,
            "<th class=\"c\" data-key=\"c{i}\" title=\"{}\">{}</th>",
            esc(c.name),
            esc(short(c.key))
        );
    }
    out.push_str("<th data-key=\"worst\">Worst</th><th title=\"the teardown statement's result\">Teardown result</th><th data-key=\"verified\">Verified</th></tr></thead>");
    for w in ws {
        row(w, &mut out);
    }
    out.push_str("</table></div>");
    if !f.errors.is_empty() || !f.notes.is_empty() {
        out.push_str("<footer><ul>");
        for e in &f.errors {
            let _ = write!(out, "<li>error: {}</li>", esc(e));
        }
        for nn in &f.notes {
            let _ = write!(out, "<li>{}</li>", esc(nn));
        }
        out.push_str("</ul></footer>");
    }
    let _ = writeln!(out, "</main><script>{SCRIPT}</script></body></html>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_quotes_and_hazards() {
        assert_eq!(
            esc("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt;&amp;&quot;"
        );
        assert_eq!(esc("a\u{202e}b"), "a\\u{202e}b");
    }

    #[test]
    fn the_policy_names_the_script_by_its_hash() {
        let f = Fleet {
            workspaces: Vec::new(),
            errors: Vec::new(),
            notes: Vec::new(),
            exit: selfprobe::model::Exit::Clean,
        };
        let page = render(&f);
        let hash =
            selfprobe::util::codec::b64_encode(&selfprobe::util::digest::sha256(SCRIPT.as_bytes()));
        assert!(page.contains(&format!("script-src 'sha256-{hash}'")));
        assert_eq!(page.matches("<script>").count(), 1);
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "no external reference"
        );
    }
}
