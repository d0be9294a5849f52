"""The report's section on custom calls: each op's target and type, the stages that keep it,
its backend config, and the MLIR of the Pallas TPU kernel it runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reactant_lab.render.highlight import esc


def custom_calls_section(calls: list[dict[str, Any]], n_stages: int,
                         text_block: Callable[[int], str]) -> str:
    """The section for the payload's ``custom_calls`` (empty text when there are none);
    ``text_block(text id)`` renders a kernel's MLIR."""
    if not calls:
        return ""
    parts = ['<section id="custom-calls"><h2>Custom calls</h2>']
    parts += [_call(c, n_stages, text_block) for c in calls]
    return "".join(parts) + "</section>"


def _call(c: dict[str, Any], n_stages: int, text_block: Callable[[int], str]) -> str:
    kernel = c["kernel"]
    name = f' &middot; kernel <code>{esc(kernel["name"])}</code>' if kernel and kernel["name"] \
        else ""
    kept = ("every stage keeps it unchanged" if len(c["stages"]) == n_stages else
            "kept unchanged by stages " + ", ".join(map(str, c["stages"])))
    facts = [("type", c["type"]), ("platform", c["platform"] or "any"),
             ("side effects", "yes" if c["has_side_effect"] else "no"),
             ("api version", c["api_version"] or "-"), ("stages", kept)]
    if kernel:
        facts.append(("kernel body", f'{kernel["body_bytes"]:,} bytes of MLIR bytecode'))
        facts += [(k, v) for k, v in kernel["fields"]]
    rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts)
    out = [f'<h3><code>{esc(c["target"])}</code>{name}</h3><table>{rows}</table>']
    if c["config"] is not None:
        cut = " (cut)" if c["config_truncated"] else ""
        out.append(f'<h4>backend config{cut}</h4><pre class="plain">{esc(c["config"])}</pre>')
    if kernel and kernel["text"] is not None:
        out.append(f"<h4>kernel MLIR</h4>{text_block(kernel['text'])}")
    elif kernel:
        out.append(f'<p class="note">The kernel\'s MLIR is not shown: {esc(kernel["note"])}</p>')
    return "".join(out)
