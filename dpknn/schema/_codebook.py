"""Codebooks: the public source of an agency file's domains and of its coded missing values.

Agencies ship microdata with their missingness coded, not blank: an IPUMS extract marks "not in
universe" and "missing" with special codes (SEX 9 = NIU, RACE 999 = Blank, INCTOT 99999999 = N.I.U.
and 99999998 = Missing), an SPSS file declares user-missing values (77 = refused, 88 = don't know),
a Stata or SAS file special missing values (``.a`` to ``.z``). Read as numbers, such a code enters an
income as a value of a hundred million. The codebook that comes with the file says what each code
means, and it is public (it is published with the extract; it describes the coding, not the
records), so it is the source of domains that differential privacy asks for. Nothing here reads a
record: a DDI codebook is parsed from its XML, a Stata, SPSS or SAS file from its metadata only
(``pyreadstat``'s ``metadataonly``).

What each code is
-----------------
Each labelled code of a variable is one of three roles, decided from its label, never from the data:

- **not applicable** (``not_applicable``): "NIU", "N.I.U.", "Not in universe", "N/A", "Not
  applicable", "Inapplicable", "IAP", "NAP". The record is outside the variable's universe: a
  structural fact, never imputed.
- **a gap** (``gaps``): "Missing", "Unknown", "Blank", "Refused", "Don't know", "Not reported", "No
  answer", "Not stated", "Illegible". A value exists but was not recorded: imputation fills it.
  An SPSS user-missing value or a Stata/SAS special missing value is a gap unless its label says
  not applicable.
- **a value** otherwise, among them mixed labels such as "N/A or no schooling" (IPUMS EDUC 0),
  which name a real category beside the structural one.

IPUMS states some codes only in a variable's coding instructions (``codInstr``: "99999999 =
N.I.U. (Not in Universe). 99999998 = Missing." for CPS INCTOT); lines of the form ``CODE = label``
there count as labelled codes.

Ranges
------
A categorical variable's domain is its labelled value codes. An amount's public range comes from the
codebook too: a DDI field of width w with d implied decimals holds at most 10^w - 1 (over 10^d), less
its special codes, and negative values only where the coding instructions say so; a Stata or SPSS
variable's range is its storage type's or display format's. Such ranges are public but wide (far wider
than any real income), and the noise of a release scales with them; a narrower public range (a
published top code) is given with ``bounds`` and the written schema says which lines to review.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path

from dpknn.utils._extras import require

__all__ = ["Codebook", "CodebookSchema", "VariableCodes", "code_role", "read_codebook", "schema_from_codebook"]

#: Suffixes of the files that are their own codebook (metadata read by pyreadstat).
STAT_SUFFIXES = {".dta": "stata", ".sav": "spss", ".zsav": "spss", ".por": "spss", ".sas7bdat": "sas"}

#: Suffix of the indicator column that carries "not applicable" for a variable read with NIU codes
#: (``INCTOT`` -> ``INCTOT_niu``; see :func:`dpknn.schema._coded_files.apply_codebook`).
NIU_SUFFIX = "_niu"

_NIU = re.compile(r"\bN\.?\s?I\.?\s?U\b|not in (the )?universe|out of (the )?universe|^\s*N/A\b|not applicable|"
                  r"inapplicable|\bINAP\b|\bIAP\b|\bNAP\b|valid skip|legitimate skip|does not apply|out of scope",
                  re.IGNORECASE)
_GAP = re.compile(r"missing|unknown|\bblank\b|refused|\bRF\b|don'?t know|\bDK\b|not reported|no answer|"
                  r"no response|non-?response|not stated|illegible|not ascertained|unascertained|not available|"
                  r"suppressed|^\s*N\.?A\.?\s*$", re.IGNORECASE)


def code_role(label):
    """The role of a code from its label: ``"not_applicable"``, ``"gap"`` or ``"value"``.

    A label of several parts ("Unknown or missing", "NIU/blank") takes a special role only when every
    part has one, so "N/A or no schooling" stays a value; a mix of not-applicable and gap parts is not
    applicable (a structural value must not be imputed, and a gap left unfilled is the lesser error).
    IPUMS's "N/A" is not applicable; a bare "NA" or "N.A." is a gap (the GSS's "no answer").
    """
    # A parenthesis explains the label ("N/A (GQ/vacant)", "N.I.U. (Not in Universe)"): the words before it decide.
    main = re.sub(r"\([^)]*\)", "", str(label)).strip() or str(label)
    split = re.split(r"\s+or\s+|/(?!A\b)|;", main, flags=re.IGNORECASE)
    parts = [p for p in split if p.strip()] or [main]
    roles = set()
    for part in parts:
        if _NIU.search(part):
            roles.add("not_applicable")
        elif _GAP.search(part):
            roles.add("gap")
        else:
            return "value"
    return "not_applicable" if "not_applicable" in roles else "gap"


@dataclass(frozen=True)
class VariableCodes:
    """One variable of a codebook.

    Attributes
    ----------
    name : str
        The column.
    label : str
        Its label in the codebook.
    kind : {"categorical", "ordinal", "continuous", "text"}
        ``categorical``: labelled codes; ``ordinal``: integers on a range (consecutive labelled codes,
        or unlabelled integers); ``continuous``: an amount; ``text``: a string without labels.
    values : dict
        Code -> label of the valid (value) codes; empty for unlabelled amounts.
    gaps : dict
        Code -> label of the codes read as a gap (a missing value, to impute).
    not_applicable : dict
        Code -> label of the codes read as not applicable.
    lower, upper : float or None
        The public range of an ordinal or continuous variable, from the codebook.
    range_source : str
        Where the range comes from (``"labelled codes"``, ``"field width 8"``, ``"storage int16"``, ...).
    gap_ranges : tuple of (low, high)
        SPSS missing ranges (``lo THRU hi``): every value inside is a gap.
    decimals : int
        Implied decimals of a DDI field (read values are already divided by ``10**decimals``).
    universe : str
        The codebook's own words on the universe, if any (text for the reviewer, never parsed).
    display_format : str
        An SPSS variable's display format (``F8.2``), kept for writing the file back.
    start, width : int or None
        A DDI field's first column (0-based) and width in a fixed-width line.
    record_types : tuple of str
        The record types (``"H"``, ``"P"``) whose lines hold the field, in a hierarchical extract.
    declared_missing : tuple
        An SPSS variable's user-missing declaration as the file gives it, written back unchanged.
    """

    name: str
    label: str = ""
    kind: str = "continuous"
    values: dict = field(default_factory=dict)
    gaps: dict = field(default_factory=dict)
    not_applicable: dict = field(default_factory=dict)
    lower: float | None = None
    upper: float | None = None
    range_source: str = ""
    gap_ranges: tuple = ()
    decimals: int = 0
    universe: str = ""
    display_format: str = ""
    start: int | None = None
    width: int | None = None
    record_types: tuple = ()
    declared_missing: tuple = ()

    @property
    def special_codes(self):
        """Every code that is not a value: gaps then not-applicable codes."""
        return [*self.gaps, *self.not_applicable]

    def labels(self):
        """Code -> label of every labelled code (values, gaps and not-applicable codes)."""
        return {**self.values, **self.gaps, **self.not_applicable}


@dataclass(frozen=True)
class Codebook:
    """The public description of an agency file: its variables and their codes.

    Read one with :func:`read_codebook`. ``file_format`` is ``"ipums-ddi"``, ``"stata"``, ``"spss"``
    or ``"sas"``; ``data_file`` the data file a DDI codebook names (beside it); ``hierarchical`` is True
    for an IPUMS extract of household and person records (``record_types``: the types and their
    variables); ``citation`` the citation IPUMS asks for; ``top_record_types`` the record types that no key
    variable links to another (the household), whose variables the records below them take.
    """

    variables: tuple
    source: str
    file_format: str
    data_file: str | None = None
    hierarchical: bool = False
    record_types: dict = field(default_factory=dict)
    citation: str = ""
    top_record_types: tuple = ()

    def parents(self, record_type):
        """The record types whose variables a ``record_type`` record takes from the lines above it: the top
        ones (a household, keyed by no other record), unless ``record_type`` is one of them."""
        if record_type in self.top_record_types:
            return ()
        return tuple(t for t in self.top_record_types if t != record_type)

    @property
    def names(self):
        """The variables' names, in the codebook's order."""
        return tuple(v.name for v in self.variables)

    def variable(self, name):
        """The :class:`VariableCodes` of ``name``; a ValueError naming the variables otherwise."""
        for v in self.variables:
            if v.name == name:
                return v
        near = [n for n in self.names if n.lower() == str(name).lower()]
        hint = f" Did you mean {near[0]!r}? (names are case-sensitive)" if near else ""
        raise ValueError(f"codebook {self.source!r} has no variable {name!r}.{hint} It has {', '.join(self.names)}.")


# --- DDI (IPUMS) ----------------------------------------------------------------------------------------

def _local(tag):
    return tag.rsplit("}", 1)[-1]


def _child(el, name):
    for c in el:
        if _local(c.tag) == name:
            return c
    return None


def _text(el, name):
    c = _child(el, name) if el is not None else None
    return "".join(c.itertext()).strip() if c is not None else ""


def _number(text):
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value == int(value) and "." not in text else value


_INSTRUCTION = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*=\s*(.+?)\s*$")


def _instruction_codes(text):
    """``CODE = label`` lines of a variable's coding instructions."""
    out = {}
    for line in text.splitlines():
        m = _INSTRUCTION.match(line)
        if m:
            out[_number(m.group(1))] = m.group(2).rstrip(".")
    return out


def _sort_codes(codes):
    return dict(sorted(codes.items(), key=lambda kv: (isinstance(kv[0], str), kv[0])))


def _classify(codes):
    """Split labelled codes into (values, gaps, not_applicable) by :func:`code_role`."""
    parts = {"value": {}, "gap": {}, "not_applicable": {}}
    for code, label in codes.items():
        parts[code_role(label)][code] = label
    return parts["value"], parts["gap"], parts["not_applicable"]


def _is_ordinal(codes, *, consecutive=False):
    """True for at least 10 integer codes mostly labelled by their own number (IPUMS AGE: "1", "2", ...,
    "100 (100+ in 1960-1970)"): an integer scale, not a list of categories. With ``consecutive`` (an SPSS
    variable declared ordinal), consecutive codes count too. Consecutive codes alone do not make a scale:
    IPUMS RELATE's 1-13 are Head, Spouse, Child, ..."""
    ints = [c for c in codes if isinstance(c, int) and not isinstance(c, bool)]
    if len(ints) != len(codes) or len(ints) < 10:
        return False
    own = sum(str(codes[c]).strip().startswith(str(c)) for c in ints)
    return own >= 0.8 * len(ints) or (consecutive and max(ints) - min(ints) + 1 == len(ints))


def _negative(instructions):
    """Whether coding instructions allow negative values ("Values can be negative"), not "cannot be negative"."""
    text = instructions.lower()
    return bool(re.search(r"(?<!non-)(?<!non )\bnegative\b", text)) and not re.search(
        r"(cannot|can't|can ?not|never|not|no) (be )?negative|no negative", text)


def _scaled(code, width, decimals):
    """A special code in the units of the read values: IPUMS writes codes of a field with implied decimals
    either raw (99999999) or scaled (999999.99); a raw one (at least 10^(width - decimals)) is divided."""
    if not decimals or not isinstance(code, (int, float)) or isinstance(code, bool):
        return code
    return code / 10 ** decimals if abs(code) >= 10 ** (width - decimals) else code


def _ddi_variable(var, loc_width):
    """A :class:`VariableCodes` from a DDI ``<var>`` element."""
    name = var.get("name") or var.get("ID")
    decimals = int(var.get("dcml") or 0)
    fmt = _child(var, "varFormat")
    is_text = fmt is not None and fmt.get("type") == "character"
    codes = {}
    for cat in var:
        if _local(cat.tag) != "catgry":
            continue
        value = _text(cat, "catValu")
        codes[value if is_text else _number(value)] = _text(cat, "labl")
    instructions = _text(var, "codInstr")
    for code, label in _instruction_codes(instructions).items():
        codes.setdefault(code, label)
    decimals_ = decimals if not is_text else 0
    codes = {_scaled(c, loc_width, decimals_): lab for c, lab in codes.items()}
    values, gaps, niu = _classify(_sort_codes(codes))
    label = _text(var, "labl")
    universe = _text(var, "universe")
    contin = var.get("intrvl") == "contin"
    if is_text:
        return VariableCodes(name, label, "categorical" if values else "text", values, gaps, niu,
                             universe=universe)
    width = loc_width
    negative = _negative(instructions)
    scale = 10 ** decimals
    special = {round(c * scale) for c in (*gaps, *niu) if isinstance(c, (int, float))}   # raw field units
    if values and not contin and not _is_ordinal(values):
        return VariableCodes(name, label, "categorical", values, gaps, niu, universe=universe)
    if values and not contin:
        lo, hi = min(values), max(values)
        return VariableCodes(name, label, "ordinal", values, gaps, niu, lower=lo, upper=hi,
                             range_source="labelled codes", universe=universe)
    # An amount or an unlabelled integer: the field's width bounds it, less the special codes at its top.
    top = 10 ** width - 1
    while top in special:
        top -= 1
    bottom = -(10 ** (width - 1) - 1) if negative else 0
    kind = "continuous" if contin or decimals else "ordinal"
    lower, upper = (bottom / scale, top / scale) if decimals else (bottom, top)
    return VariableCodes(name, label, kind, values, gaps, niu, lower=lower, upper=upper,
                         range_source=f"field width {width}" + (f", {decimals} implied decimals" if decimals else "")
                         + (", negative values allowed" if negative else ""), decimals=decimals, universe=universe)


def _read_ddi(path):
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as exc:
        raise ValueError(f"codebook {str(path)!r} is not valid XML: {exc}") from None
    if _local(root.tag) != "codeBook":
        raise ValueError(f"codebook {str(path)!r} is not a DDI codebook (root element {_local(root.tag)!r}, "
                         "expected 'codeBook').")
    variables, record_types, data_file, hierarchical, citation, top = [], {}, None, False, "", []
    for el in root.iter():
        tag = _local(el.tag)
        if tag == "fileName" and data_file is None:
            data_file = "".join(el.itertext()).strip()
        elif tag == "fileStrc":
            hierarchical = el.get("type") == "hierarchical"
        elif tag == "recGrp":
            record_types[el.get("rectype")] = []
            if not el.get("keyvar"):
                top.append(el.get("rectype"))
        elif tag in ("biblCit", "citReq") and not citation:
            citation = "".join(el.itertext()).strip()
    for var in root.iter():
        if _local(var.tag) != "var":
            continue
        loc = _child(var, "location")
        if loc is None or loc.get("width") is None:
            raise ValueError(f"codebook {str(path)!r}: variable {var.get('name')!r} has no <location width=...>; "
                             "only fixed-width DDI extracts are read.")
        v = _ddi_variable(var, int(loc.get("width")))
        v = replace(v, start=int(loc.get("StartPos")) - 1, width=int(loc.get("width")),
                    record_types=tuple((var.get("rectype") or "").split()))
        variables.append(v)
        for rt in (var.get("rectype") or "").split():
            record_types.setdefault(rt, []).append(v.name)
    if not variables:
        raise ValueError(f"codebook {str(path)!r} describes no variable.")
    return Codebook(tuple(variables), str(path), "ipums-ddi", data_file=data_file, hierarchical=hierarchical,
                    record_types={k: tuple(v) for k, v in record_types.items()}, citation=citation,
                    top_record_types=tuple(top))


# --- Stata, SPSS, SAS (pyreadstat metadata) ---------------------------------------------------------------

#: Ranges of the storage types a Stata or SAS file declares (Stata's valid non-missing ranges).
_STORAGE = {"int8": (-127, 100), "int16": (-32767, 32740), "int32": (-2147483647, 2147483620)}


def _format_range(fmt):
    """The range of an SPSS display format such as ``F8.2`` (width 8, 2 decimals): +-(10^(w-d-1) - 10^-d)."""
    m = re.fullmatch(r"[A-Z]+(\d+)(?:\.(\d+))?", fmt or "")
    if not m or not fmt.startswith(("F", "N", "COMMA", "DOT", "DOLLAR")):
        return None
    width, dec = int(m.group(1)), int(m.group(2) or 0)
    digits = width - dec - (1 if dec else 0)
    if digits < 1:
        return None
    top = 10 ** digits - 10 ** -dec if dec else 10 ** digits - 1
    return (-top if not fmt.startswith("N") else 0), top, dec


def read_stat_metadata(path):
    """pyreadstat's metadata of a Stata, SPSS or SAS file (no record is read)."""
    pyreadstat = require("pyreadstat", "agency", "reading Stata, SPSS or SAS files")
    kind = STAT_SUFFIXES[Path(path).suffix.lower()]
    reader = {"stata": pyreadstat.read_dta, "spss": pyreadstat.read_sav if Path(path).suffix.lower() != ".por"
              else pyreadstat.read_por, "sas": pyreadstat.read_sas7bdat}[kind]
    kwargs = {"metadataonly": True}
    if reader is not pyreadstat.read_por:
        kwargs["user_missing"] = True
    _, meta = reader(str(path), **kwargs)
    return kind, meta


def _stat_variable(name, meta, kind):
    v = _stat_codes(name, meta, kind)
    fmt = (meta.original_variable_types or {}).get(name, "") if kind == "spss" else ""
    return replace(v, display_format=fmt)


def _plain(x):
    """An integer-valued finite float as int (SPSS gives every number as float); anything else as it is."""
    if isinstance(x, float) and math.isfinite(x) and x == int(x):
        return int(x)
    return x


def _stat_codes(name, meta, kind):
    labels = {_plain(k): v for k, v in dict(meta.variable_value_labels.get(name, {})).items()}
    gaps, niu, gap_ranges = {}, {}, []

    def special(code, default):
        label = labels.pop(code, default)
        (niu if code_role(label) == "not_applicable" else gaps)[code] = label

    # SPSS user-missing values (numbers or strings, discrete or lo THRU hi, LOWEST/HIGHEST as infinities): each
    # is a gap unless labelled as not applicable.
    declared = tuple((meta.missing_ranges or {}).get(name, []))
    for r in declared:
        lo, hi = _plain(r["lo"]), _plain(r["hi"])
        if lo == hi:
            special(lo, "missing")
        else:
            gap_ranges.append((lo, hi))
    # Stata and SAS special missing values are letters (.a-.z): every letter the metadata names, and every
    # labelled letter (pyreadstat's metadata lists no user-missing values for a .dta).
    letters = [*(meta.missing_user_values or {}).get(name, []), *(k for k in labels if isinstance(k, str))]
    if kind in ("stata", "sas"):
        for letter in dict.fromkeys(letters):
            special(letter, f"missing .{letter}")
    values, more_gaps, more_niu = _classify(_sort_codes(labels))
    gaps.update(more_gaps)
    niu.update(more_niu)
    label = (meta.column_names_to_labels or {}).get(name) or ""
    storage = (meta.readstat_variable_types or {}).get(name, "")
    fmt = (meta.original_variable_types or {}).get(name, "")
    measure = (getattr(meta, "variable_measure", None) or {}).get(name, "unknown")
    common = {"gap_ranges": tuple(gap_ranges), "declared_missing": declared}
    if storage == "string":
        return VariableCodes(name, label, "categorical" if values else "text", values, gaps, niu, **common)
    # Labels make a category list where the file says so (SPSS nominal or ordinal), or, without a measure
    # (Stata, SAS, SPSS "unknown"), where at least two values are labelled: one labelled value of an amount
    # ({0: "No income"}, {99: "99 or older"}) marks a value, not a domain.
    if values and (measure in ("nominal", "ordinal") or (measure == "unknown" and len(values) >= 2)):
        if _is_ordinal(values, consecutive=measure == "ordinal"):
            return VariableCodes(name, label, "ordinal", values, gaps, niu, lower=min(values), upper=max(values),
                                 range_source="labelled codes", **common)
        return VariableCodes(name, label, "categorical", values, gaps, niu, **common)
    rng = _format_range(fmt) if kind == "spss" else None
    if rng is not None:
        lower, upper, dec = rng
        source = f"display format {fmt}"
        integer = dec == 0
    elif storage in _STORAGE:
        lower, upper = _STORAGE[storage]
        source, integer = f"storage {storage}", True
    else:
        lower = upper = None
        source, integer = f"storage {storage or 'unknown'}: no range; give bounds", False
    ordinal = integer and (measure == "ordinal" or (kind != "spss" and measure != "scale"))
    return VariableCodes(name, label, "ordinal" if ordinal else "continuous", values, gaps, niu, lower=lower,
                         upper=upper, range_source=source, **common)


def _read_stat(path):
    kind, meta = read_stat_metadata(path)
    variables = tuple(_stat_variable(n, meta, kind) for n in meta.column_names)
    return Codebook(variables, str(path), kind, data_file=str(path))


def read_codebook(path):
    """The codebook of an agency file, read from public metadata only.

    Parameters
    ----------
    path : str or Path
        A DDI XML codebook (an IPUMS extract's ``.xml``), or a Stata ``.dta``, SPSS ``.sav``/``.zsav``/
        ``.por`` or SAS ``.sas7bdat`` file, which is its own codebook (its value labels, user-missing
        values and storage types; pyreadstat reads the metadata without a record).

    Returns
    -------
    Codebook
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"codebook {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    if suffix == ".xml":
        return _read_ddi(path)
    if suffix in STAT_SUFFIXES:
        return _read_stat(path)
    raise ValueError(f"codebook {str(path)!r}: use a DDI .xml codebook or a .dta, .sav, .zsav, .por or .sas7bdat "
                     "file (its own codebook).")


# --- a schema from a codebook -------------------------------------------------------------------------------

@dataclass(frozen=True)
class CodebookSchema:
    """A schema built from a codebook, with what a reviewer should check.

    ``review`` maps an attribute to the reason its lines need a look (a range from a field width, a
    universe stated in words); :meth:`to_toml` writes them as comments above the schema, with each
    category's label. Unlike a draft read from data, nothing here came from a record, so the file has
    no ``draft`` line and is accepted as it is.
    """

    schema: object
    codebook: Codebook
    review: dict

    def to_toml(self):
        """The schema as TOML, headed by its source, the review notes and the codes' labels."""
        head = [f"# Schema from the codebook {Path(self.codebook.source).name} ({self.codebook.file_format}): every "
                "domain and code below is", "# from the codebook (public), none from the data."]
        if self.codebook.citation:
            head.append("# Cite the data as the codebook asks: " + " ".join(self.codebook.citation.split())[:300])
        niu = [a.name for a in self.schema.imputed if a.universe is not None
               and any(n.endswith(NIU_SUFFIX) for n in a.universe.where)]
        if niu:
            head.append(f"# Not applicable codes are read into the known indicator columns NAME{NIU_SUFFIX} "
                        "(true where the record is outside the universe): " + ", ".join(niu) + ".")
        for name, why in self.review.items():
            head.append(f"# review {name}: {why}")
        for a in (*self.schema.known, *self.schema.imputed):
            if a.name.endswith(NIU_SUFFIX) and a.name[:-len(NIU_SUFFIX)] in self.codebook.names:
                continue
            v = self.codebook.variable(a.name)
            labels = v.labels()
            if labels and len(labels) <= 120:
                head.append(f"# {a.name}: " + "; ".join(f"{c} = {lab}" for c, lab in labels.items()))
            elif labels:
                head.append(f"# {a.name}: {len(labels)} labelled codes (see the codebook)")
        return "\n".join(head) + "\n\n" + self.schema.to_toml()


def _names(value, what):
    if value is None:
        return []
    if isinstance(value, str):
        return [n.strip() for n in value.split(",") if n.strip()]
    return list(value)


def _note_file_metadata(codebook, names, note):
    """A review note on each of ``names`` when the codebook is a data file's own metadata."""
    if codebook.file_format in ("stata", "spss", "sas"):
        # A file's own metadata is public only if it was published as such: the program that wrote the file may
        # have derived it from the data (Stata's compress and encode, SPSS's AUTORECODE and import widths).
        for name in names:
            note(name, "its domain comes from the file's own metadata (value labels, storage type or format): "
                       "public only if that metadata is the published codebook's, not derived from these data.")


def schema_from_codebook(codebook, *, known, imputed, label=None, bounds=None, bin_widths=None):
    """A :class:`~dpknn.schema.Schema` whose domains and codes all come from a codebook.

    What the codebook cannot say comes from the arguments: which attributes are known and which imputed,
    narrower public ranges, bins of known ordinals.

    Parameters
    ----------
    codebook : Codebook or str or Path
        A codebook or its path (:func:`read_codebook`).
    known, imputed : sequence of str (or comma-separated str)
        The known (matching) and imputed attributes.
    label : str or None
        Column of unique integer record labels.
    bounds : dict of str to (lower, upper), optional
        Public ranges narrower than the codebook's (a published top code): the noise of a release scales
        with the range, and a field width's range is wide.
    bin_widths : dict of str to int, optional
        Bins of known ordinal attributes (``{"AGE": 5}``).

    Returns
    -------
    CodebookSchema
        ``.schema`` the schema, ``.to_toml()`` its file with the review notes.

    Notes
    -----
    A known attribute keeps a not-applicable code as a category of its own (a known attribute is complete:
    the code is a value of the record). An imputed attribute with not-applicable codes gets a universe on a
    known indicator ``NAME_niu`` (categories false, true), which reading the file with the codebook adds
    (:func:`dpknn.schema._coded_files.apply_codebook`): outside it the attribute is not applicable in every
    command, as for any universe. A gap code is a missing value.
    """
    from dpknn.schema._attributes import Categorical, Schema

    if not isinstance(codebook, Codebook):
        codebook = read_codebook(codebook)
    known, imputed = _names(known, "known"), _names(imputed, "imputed")
    bounds, bin_widths = dict(bounds or {}), dict(bin_widths or {})
    _check_options(codebook, known, imputed, bounds, bin_widths)
    review = {}
    known_attrs, imputed_attrs, indicators = [], [], []

    def note(name, text):
        review[name] = (review[name] + " " if review.get(name) else "") + text

    for name in known:
        v = _as_numeric(codebook.variable(name), bounds, note)
        if v.kind == "categorical":
            known_attrs.append(Categorical(name, [*v.values, *v.not_applicable]))
        elif v.kind == "text":
            raise ValueError(f"known attribute {name!r} is unlabelled text; a known attribute needs a public domain.")
        else:
            known_attrs.append(_numeric(v, "known", bounds, bin_widths, review))
        if v.not_applicable and v.kind != "categorical":
            review[name] = ("its not-applicable codes " + ", ".join(map(str, v.not_applicable)) + " are outside the "
                            "range of a known attribute, which must be complete: records with them are refused.")
    for name in imputed:
        v = _as_numeric(codebook.variable(name), bounds, note)
        if v.kind == "categorical":
            attr = Categorical(name, list(v.values))
        elif v.kind == "text":
            raise ValueError(f"imputed attribute {name!r} is unlabelled text; give it value labels in the codebook.")
        else:
            attr = _numeric(v, "imputed", bounds, bin_widths, review)
        if v.not_applicable:
            flag = name + NIU_SUFFIX
            indicators.append(Categorical(flag, [False, True]))
            attr = type(attr)(**{**_fields(attr), "universe": {flag: [False]}})
            if v.universe:
                note(name, f"the codebook's universe: {' '.join(v.universe.split())[:200]!r}; not applicable is read "
                           f"from its codes into {flag}.")
        imputed_attrs.append(attr)
    _note_file_metadata(codebook, (*known, *imputed), note)
    schema = Schema(known=[*known_attrs, *indicators], imputed=imputed_attrs, label=label)
    return CodebookSchema(schema, codebook, review)


def _check_options(codebook, known, imputed, bounds, bin_widths):
    """Every name is a variable of the codebook; bounds name numeric attributes, bins known ones."""
    for name in (*known, *imputed, *bounds, *bin_widths):
        codebook.variable(name)
    for name in bounds:
        v = codebook.variable(name)
        labelled_numbers = v.kind == "categorical" and all(isinstance(c, (int, float)) for c in v.values)
        if (v.kind in ("categorical", "text") and not labelled_numbers) or name not in (*known, *imputed):
            raise ValueError(f"bounds name {name!r}, which is not a numeric attribute of the schema; ranges apply "
                             "to the ordinal and continuous attributes listed in known or imputed.")
    for name in bin_widths:
        if name not in known or codebook.variable(name).kind in ("categorical", "text"):
            raise ValueError(f"bin_widths name {name!r}, which is not a known numeric attribute; bins apply to "
                             "known ordinal attributes.")


def _as_numeric(v, bounds, note):
    """``v`` as a numeric variable where ``bounds`` gives it a range although its labels made it categorical (an
    amount with a few labelled values, in a file that declares no measure)."""
    if v.kind == "categorical" and v.name in bounds:
        note(v.name, "read as a number on its given bounds, not as the categories of its labels.")
        return replace(v, kind="ordinal" if all(isinstance(c, int) for c in v.values) else "continuous",
                       lower=None, upper=None, range_source="bounds")
    return v


def _numeric(v, role, bounds, bin_widths, review):
    """The Ordinal or Continuous attribute of a numeric variable; a range from a field width or a storage
    type goes into ``review``."""
    from dpknn.schema._attributes import Continuous, Ordinal

    lower, upper = bounds.get(v.name, (v.lower, v.upper))
    if lower is None or upper is None:
        raise ValueError(f"{v.name}: the codebook gives no range ({v.range_source}); pass bounds={{{v.name!r}: "
                         "(lower, upper)} (--bounds NAME=LOW:HIGH) from a public source.")
    if v.name not in bounds and not v.range_source.startswith("labelled"):
        review[v.name] = (f"range [{lower:,}, {upper:,}] from the {v.range_source}: public but wide, and the "
                          "noise of a release scales with it; give a published top code with bounds/--bounds.")
    if v.values and not v.range_source.startswith("labelled"):
        shown = "; ".join(f"{c} = {lab}" for c, lab in list(v.values.items())[:8])
        review[v.name] = (review.get(v.name, "") + " " if review.get(v.name) else "") + (
            f"labelled codes read as amounts: {shown}. If one is not an amount (\"hours vary\"), recode it first.")
    if role == "known" or v.kind == "ordinal":
        if role == "known" and v.decimals:
            raise ValueError(f"known attribute {v.name!r} has {v.decimals} implied decimals; a known attribute "
                             "must be an integer (ordinal) or categorical one.")
        return Ordinal(v.name, math.floor(lower), math.floor(upper), bin_width=bin_widths.get(v.name, 1))
    return Continuous(v.name, float(lower), float(upper))


def _fields(attr):
    from dataclasses import fields

    return {f.name: getattr(attr, f.name) for f in fields(attr)}
