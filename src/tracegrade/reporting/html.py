"""The HTML report: one self-contained file (styles and script inline, no network; opens from
`file://` and as a CI artifact).

The report's data is embedded as JSON in a `<script type="application/json">` element (every `<`,
`>` and `&` written as a `\\u` escape, so recorded text cannot close the element) and the page's
script builds the DOM from it with `textContent` only: recorded text is never parsed as HTML. Every
text value of the data has its control characters, bidi embeddings, overrides and isolates written as
escapes (`_text.printable`; newlines kept in multi-line text: reasons, replies, attribute values), so
a name cannot be drawn reordered or as another name.
A case's details (verdicts, trajectory diff, conversation, span waterfall) are built when it is
first opened; failing cases open at load.
"""

from __future__ import annotations

import html
import json
from typing import Any

from .._text import printable
from .json_report import report_dict
from .model import Report
from .trace import trajectory_diff

__all__ = ["write_html"]

_INTERN_FROM = 64
"""Attribute values this long are stored once per report."""
_OPEN_AT_LOAD = 50
"""Failing cases opened (and rendered) when the page loads; the others render when opened."""


def _script_safe(data: str) -> str:
    """JSON text that cannot end the `<script>` element holding it, nor open a comment in it."""
    return data.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _data(report: Report) -> dict[str, Any]:
    doc = report_dict(report)
    for case, case_doc in zip(report.cases, doc["cases"], strict=True):
        if case.expected is None:
            continue
        for run_doc in case_doc["runs"]:
            trace = run_doc.get("trace")
            if trace is not None:
                run_doc["diff"] = trajectory_diff(case.expected, trace["calls"])
    doc = _shown(doc)
    doc["open_at_load"] = _OPEN_AT_LOAD
    doc["strings"] = _intern_attributes(doc["cases"])
    return doc


_LINES = frozenset({"reason", "user", "reply", "error", "detail", "retry", "note", "attrs"})
"""Keys whose text (at any depth below them) the page shows as multi-line text: newlines and tabs kept."""


def _shown(doc: dict[str, Any]) -> dict[str, Any]:
    """A copy of `doc` with every string, dict keys included, as `printable` writes it (with `lines`
    below a `_LINES` key); built iteratively, so recorded arguments of any depth terminate."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any, bool]] = [(doc, root, 0, False)]  # (value, container, slot, lines)
    while stack:
        value, container, slot, lines = stack.pop()
        if isinstance(value, str):
            value = printable(value, lines=lines)
        elif isinstance(value, dict):
            copy: dict[str, Any] = {}
            for k, v in value.items():
                key = printable(str(k))
                copy[key] = None
                stack.append((v, copy, key, lines or k in _LINES))
            value = copy
        elif isinstance(value, list | tuple):
            items: list[Any] = [None] * len(value)
            stack.extend((v, items, i, lines) for i, v in enumerate(value))
            value = items
        container[slot] = value
    result: dict[str, Any] = root[0]
    return result


def _intern_attributes(cases: list[dict[str, Any]]) -> list[str]:
    """Long attribute values (tool definitions, message histories: repeated by every model request
    of every run) stored once; a span's attribute then holds the value's index in the returned list."""
    strings: list[str] = []
    index: dict[str, int] = {}

    def intern(value: str) -> str | int:
        if len(value) < _INTERN_FROM:
            return value
        i = index.get(value)
        if i is None:
            i = index[value] = len(strings)
            strings.append(value)
        return i

    for case in cases:
        for run in case["runs"]:
            trace = run.get("trace")
            if trace is not None:  # copied: the report's own data stays as it is
                spans = [{**s, "attrs": {k: intern(v) for k, v in s["attrs"].items()}} for s in trace["spans"]]
                run["trace"] = {**trace, "spans": spans}
    return strings


def write_html(report: Report) -> str:
    data = _script_safe(json.dumps(_data(report), ensure_ascii=False, separators=(",", ":")))
    title = html.escape(printable(f"{report.title} — {report.created}"))
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">\n"
        f"<title>{title}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        f'<header><h1>{title}</h1><p id="summary">{html.escape(report.summary)}</p></header>\n'
        '<main id="app"><noscript>This report needs JavaScript to show its details.</noscript></main>\n'
        f'<script type="application/json" id="report-data">{data}</script>\n'
        f"<script>{_JS}</script>\n</body>\n</html>\n"
    )


_CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--ne:#9a6700;--err:#8250df;--mut:#57606a;--line:#d0d7de;--bg2:#f6f8fa}
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:0 1.5rem 3rem;color:#1f2328}
h1{font-size:1.4rem;margin:1rem 0 .3rem}h2{font-size:1.1rem;margin:1.2rem 0 .4rem}h3{font-size:1rem;margin:.8rem 0 .3rem}
#summary{font-weight:600}
table{border-collapse:collapse;margin:.3rem 0 .8rem}th,td{border:1px solid var(--line);padding:.2rem .5rem;text-align:left;vertical-align:top}
th{background:var(--bg2)}td.num{text-align:right;font-variant-numeric:tabular-nums}
.passed{color:var(--ok)}.failed{color:var(--bad)}.not_evaluated{color:var(--ne)}.error{color:var(--err)}.no-checks{color:var(--ne)}
.badge{display:inline-block;padding:0 .4rem;border-radius:.6rem;font-size:.8rem;font-weight:600;border:1px solid currentColor;margin-right:.3rem}
details.case{border:1px solid var(--line);border-radius:6px;margin:.5rem 0;padding:.3rem .7rem}
details.case>summary{cursor:pointer;font-weight:600}details.verdict-failed{border-left:4px solid var(--bad)}
details.verdict-passed{border-left:4px solid var(--ok)}details.verdict-no-checks{border-left:4px solid var(--ne)}
.pre{white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85rem}
.filters button{margin-right:.3rem}
table.diff td.mark{font-weight:700;text-align:center;width:1.5rem}
tr.diff-match td.mark{color:var(--ok)}tr.diff-missing{background:#ffebe9}tr.diff-extra{background:#fff8c5}
tr.diff-moved{background:#ddf4ff}tr.diff-args{background:#fbefff}tr.diff-optional,tr.diff-ignored{color:var(--mut)}
.conversation .msg{max-width:52rem;margin:.3rem 0;padding:.3rem .6rem;border-radius:6px;background:var(--bg2)}
.conversation .user{border-left:3px solid #0969da}.conversation .assistant{border-left:3px solid var(--ok)}
.waterfall{border:1px solid var(--line);border-radius:6px;font-size:.82rem}
.span-row{display:grid;grid-template-columns:minmax(16rem,28%) 1fr 11rem;align-items:center;border-top:1px solid #eaeef2;cursor:pointer}
.span-row:first-child{border-top:0}.span-row:hover{background:var(--bg2)}
.span-name{white-space:nowrap;overflow:hidden;text-overflow:ellipsis;padding:.1rem .3rem}
.toggle{display:inline-block;width:1rem;color:var(--mut)}
.track{position:relative;height:1.1rem;margin:0 .4rem}
.bar{position:absolute;top:.15rem;height:.8rem;min-width:2px;border-radius:2px;background:#8c959f}
.bar.kind-agent{background:#6e40c9}.bar.kind-model{background:#0969da}.bar.kind-tool{background:#1a7f37}
.bar.failed{background:var(--bad);background-image:repeating-linear-gradient(45deg,transparent 0 4px,rgba(255,255,255,.45) 4px 8px)}
.bar.open{opacity:.5}.span-meta{color:var(--mut);text-align:right;padding-right:.4rem;white-space:nowrap}
.attrs{grid-column:1/-1;margin:.2rem .5rem .5rem 2rem;background:var(--bg2);padding:.3rem .5rem;border-radius:4px}
.attrs table{margin:0}.badge.flaky{color:#bc4c00}.hidden{display:none}.note{color:var(--mut)}
"""

_JS = r"""
(function(){
"use strict";
const t0 = performance.now();
const R = JSON.parse(document.getElementById("report-data").textContent);
const app = document.getElementById("app");
function el(tag, cls, text){const e=document.createElement(tag); if(cls) e.className=cls; if(text!==undefined&&text!==null) e.textContent=String(text); return e;}
function add(parent, ...kids){for(const k of kids) if(k) parent.appendChild(k); return parent;}
const VERDICT = {"passed":"PASSED","failed":"FAILED","no checks":"NO CHECKS"};
const MARK = {"match":"=","missing":"\u2212","extra":"+","moved":"\u21c5","args":"\u2260","optional":"\u25cb","ignored":"\u00b7"};
function vcls(v){return v==="no checks"?"no-checks":v;}
function fmtDur(us){if(us===null||us===undefined) return "open"; if(us<1000) return us+" \u00b5s"; if(us<1e6) return (us/1000).toFixed(1)+" ms"; return (us/1e6).toFixed(2)+" s";}
function table(headers, rows, cls){const t=el("table",cls); const h=el("tr"); for(const x of headers) add(h, el("th",null,x)); add(t,h); for(const r of rows) add(t,r); return t;}
function row(cells, cls){const tr=el("tr",cls); for(const c of cells){ if(c instanceof Node) add(tr,c); else add(tr, el("td",null,c)); } return tr;}
function headline(c){const k=c.checks; return "score "+c.score.toFixed(2)+" ("+c.runs_passed+"/"+c.runs_total+" runs passed, threshold "+c.threshold.toFixed(2)+"); checks: "+k.passed+" passed, "+k.failed+" failed, "+k.not_evaluated+" not evaluated, "+k.error+" errors";}

function renderTables(){
  for(const tb of (R.tables||[])){
    add(app, el("h2",null,tb.title));
    add(app, table(tb.columns, tb.rows.map(r=>row(r.map((v,i)=>{ if(tb.links&&i===0&&tb.links[r[0]]){const td=el("td"); const a=el("a",null,v); a.href="#"+tb.links[r[0]]; return add(td,a);} return el("td",typeof v==="number"?"num":null,v);}))), "summary-table"));
  }
}
function renderIndex(){
  add(app, el("h2",null,"Cases"));
  const f=el("div","filters");
  const all=el("button",null,"all"), failed=el("button",null,"failing only");
  all.onclick=()=>{for(const d of document.querySelectorAll("details.case, tr.case-row")) d.classList.remove("hidden");};
  failed.onclick=()=>{for(const d of document.querySelectorAll("details.case, tr.case-row")) d.classList.toggle("hidden", d.dataset.verdict!=="failed");};
  add(app, add(f, all, failed));
  const rows = R.cases.map((c,i)=>{
    const a=el("a",null,c.id); a.href="#case-"+i; const td=add(el("td"),a);
    const tr=row([td, el("td",vcls(c.verdict),VERDICT[c.verdict]), el("td","num",c.score.toFixed(2)), el("td","num",c.runs_passed+"/"+c.runs_total), el("td","num",c.threshold.toFixed(2)), el("td","num",c.checks.passed), el("td","num",c.checks.failed), el("td","num",c.checks.not_evaluated), el("td","num",c.checks.error)], "case-row");
    tr.dataset.verdict=c.verdict; return tr;});
  add(app, table(["case","result","score","runs passed","threshold","checks passed","failed","not evaluated","errors"], rows, "cases"));
}
function renderChecks(run){
  const rows=[];
  for(const t of run.turns) for(const k of t.checks) rows.push(row([run.turns.length>1?String(t.index+1):"", k.name+(k.informational?" (informational)":""), el("td",k.outcome,k.outcome), k.score===null?"":k.score.toFixed(2), el("td","pre",k.reason)], "check-row "+k.outcome));
  if(!rows.length) return el("p","note","No checks ran.");
  return table(["turn","evaluator","outcome","score","reason"], rows, "checks");
}
function renderDiff(diff,turn){
  const wrap=el("div","diff-wrap"); add(wrap, el("h3",null,"Expected vs observed trajectory"+(turn?" (turn "+turn+")":"")));
  add(wrap, table(["","expected","observed","detail"], diff.map(d=>{const r=row([el("td","mark",MARK[d.mark]||"?"), el("td","pre",d.expected||""), el("td","pre",d.observed||""), el("td","pre",(d.detail||"")+(d.failed?" (call failed)":""))], "diff-row diff-"+d.mark); r.dataset.mark=d.mark; r.title=d.mark; return r;}), "diff"));
  return wrap;
}
function renderConversation(run){
  const turns=run.turns.filter(t=>t.user||t.reply); if(turns.length<2) return null;
  const c=el("div","conversation"); add(c, el("h3",null,"Conversation"));
  for(const t of turns){
    if(t.user) add(c, add(el("div","msg user"), el("strong",null,"user (turn "+(t.index+1)+"): "), el("span","pre",t.user)));
    if(t.reply) add(c, add(el("div","msg assistant"), el("strong",null,"reply: "), el("span","pre",t.reply)));
    if(t.error) add(c, el("div","msg error","error: "+t.error));
  }
  return c;
}
function renderWaterfall(trace){
  const wrap=el("div","waterfall-wrap"); add(wrap, el("h3",null,"Timeline"));
  const spans=trace.spans; if(!spans.length){add(wrap, el("p","note","No spans were recorded.")); return wrap;}
  let end=1; for(const s of spans) end=Math.max(end, s.start+(s.dur===null?0:s.dur));
  const wf=el("div","waterfall"), rows=[], depth=[], kids=spans.map(()=>[]);
  spans.forEach((s,i)=>{depth[i]=s.parent<0?0:depth[s.parent]+1; if(s.parent>=0) kids[s.parent].push(i);});
  function setHidden(i, hidden){for(const k of kids[i]){rows[k].classList.toggle("hidden", hidden); if(hidden&&rows[k].attrsBox) rows[k].attrsBox.classList.add("hidden"); setHidden(k, hidden||rows[k].dataset.collapsed==="1");}}
  spans.forEach((s,i)=>{
    const r=el("div","span-row kind-"+s.kind+(s.failed?" failed":"")); r.dataset.index=i; r.dataset.kind=s.kind;
    const name=el("div","span-name"); name.style.paddingLeft=(depth[i]*0.9+0.3)+"rem";
    const tg=el("span","toggle",kids[i].length?"\u25be":""); add(name, tg, el("span",null,s.name));
    if(s.label&&s.label!==s.name) add(name, el("span","note"," "+s.label));
    if(s.failed) add(name, el("span","badge failed", s.retry?"retried":"failed"));
    if(s.parallel) add(name, el("span","badge","parallel"));
    const track=el("div","track"); const bar=el("div","bar kind-"+s.kind+(s.failed?" failed":"")+(s.dur===null?" open":""));
    bar.style.left=(100*s.start/end)+"%"; bar.style.width=(100*(s.dur===null?end-s.start:s.dur)/end)+"%";
    bar.title=s.name+" \u2014 "+fmtDur(s.dur); add(track, bar);
    let meta=fmtDur(s.dur); if(s.tokens) meta+=" \u00b7 "+((s.tokens[0]||0)+(s.tokens[1]||0))+" tok";
    add(r, name, track, el("div","span-meta",meta));
    tg.onclick=(ev)=>{ev.stopPropagation(); if(!kids[i].length) return; const c=r.dataset.collapsed==="1"; r.dataset.collapsed=c?"0":"1"; tg.textContent=c?"\u25be":"\u25b8"; setHidden(i, !c);};
    r.onclick=()=>{ if(!r.attrsBox){ const box=el("div","attrs"); const keys=Object.keys(s.attrs);
        add(box, keys.length?table(["attribute","value"], keys.map(k=>row([k, el("td","pre",typeof s.attrs[k]==="number"?R.strings[s.attrs[k]]:s.attrs[k])])), "attrs-table"):el("span","note","no attributes"));
        if(s.retry) add(box, el("p","pre","retry requested: "+s.retry));
        r.attrsBox=box; r.after(box);} else r.attrsBox.classList.toggle("hidden"); };
    rows.push(r); add(wf, r);
  });
  add(wrap, wf); if(trace.note) add(wrap, el("p","note",trace.note));
  return wrap;
}
function renderStats(st){
  const w=el("div","stats"); add(w, el("h3",null,"Repeated runs"));
  const bits=Object.entries(st.pass_at_k).map(([k,v])=>"pass@"+k+" "+v.toFixed(2)).concat(Object.entries(st.pass_hat_k).filter(([k])=>k!=="1").map(([k,v])=>"pass^"+k+" "+v.toFixed(2)));
  add(w, el("p","pass-k",bits.join(", ")));
  add(w, table(["check","runs passed","pass rate","95% CI","not evaluated",""], st.checks.map(c=>row([c.name, el("td","num",c.passed+"/"+c.runs), el("td","num",c.rate===null?"":c.rate.toFixed(2)), el("td","num",c.ci95[0].toFixed(2)+"\u2013"+c.ci95[1].toFixed(2)), el("td","num",c.not_evaluated), add(el("td"), c.flaky?el("span","badge flaky","flaky"):null, c.informational?el("span","badge","informational"):null)], "stat-row"+(c.flaky?" flaky":""))), "stats-table"));
  return w;
}
function renderCaseBody(d, c){
  if(c.tags&&c.tags.length) add(d, el("p","note","tags: "+c.tags.join(", ")));
  if(c.stats) add(d, renderStats(c.stats));
  for(const run of c.runs){
    const rv=run.verdict||(run.passed?"passed":"failed"); const sec=el("section","run"); add(sec, el("h3", "run-title "+vcls(rv), "Run "+(run.index+1)+": "+rv+(run.attempts>1?", "+run.attempts+" attempts":"")+(run.label?" \u2014 "+run.label:"")));
    if(run.error) add(sec, el("p","pre error","error: "+run.error));
    add(sec, renderChecks(run));
    const calls=[]; for(const t of run.turns) for(const x of t.tool_calls) calls.push(x);
    add(sec, el("p","pre","tool calls: "+(calls.join(", ")||"none")));
    if(run.diff) add(sec, renderDiff(run.diff));
    else for(const t of run.turns) if(t.diff) add(sec, renderDiff(t.diff, run.turns.length>1?t.index+1:0));
    add(sec, renderConversation(run));
    if(run.trace) add(sec, renderWaterfall(run.trace));
    add(d, sec);
  }
}
function renderCases(){
  let opened=0;
  R.cases.forEach((c,i)=>{
    const d=el("details","case verdict-"+vcls(c.verdict)); d.id="case-"+i; d.dataset.verdict=c.verdict;
    const s=el("summary"); add(s, el("span","badge "+vcls(c.verdict),VERDICT[c.verdict]), el("span",null,c.id), el("span","note"," \u2014 "+headline(c)));
    if(c.stats&&c.stats.flaky.length) add(s, el("span","badge flaky","flaky: "+c.stats.flaky.join(", ")));
    add(d, s); let built=false;
    d.addEventListener("toggle", ()=>{ if(d.open&&!built){built=true; renderCaseBody(d,c);} });
    if(c.verdict==="failed"&&opened<R.open_at_load){opened++; built=true; renderCaseBody(d,c); d.open=true;}
    add(app, d);
  });
  if(location.hash){const t=document.getElementById(location.hash.slice(1)); if(t&&t.tagName==="DETAILS") t.open=true;}
}
renderTables(); renderIndex(); renderCases();
document.body.dataset.rendered="1";
document.body.dataset.renderMs=String(Math.round(performance.now()));
document.body.dataset.scriptMs=String(Math.round(performance.now()-t0));
})();
"""
