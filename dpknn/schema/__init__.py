"""Public domains of the attributes, their discretisation, schema drafts, and agency files.

:class:`Schema` of :class:`Categorical`, :class:`Ordinal` and :class:`Continuous` attributes (with
:class:`Universe` conditions), :class:`Discretization` and :func:`geometric_edges` for model bins,
:func:`draft_schema` and :func:`read_attributes`; agency files with coded missing values:
:func:`read_codebook` and :func:`schema_from_codebook` (IPUMS DDI), :func:`read_coded` and :func:`write_coded`
(Stata, SPSS, SAS), :func:`fixed_width_to_parquet`.
"""

from dpknn.utils._lazy import lazy_exports

__all__ = [
    "Categorical",
    "Continuous",
    "Discretization",
    "Ordinal",
    "Schema",
    "Universe",
    "draft_schema",
    "fixed_width_to_parquet",
    "geometric_edges",
    "read_attributes",
    "read_codebook",
    "read_coded",
    "schema_from_codebook",
    "write_coded",
]

# Each public name loads its module on first use (dpknn.utils._lazy): importing the package stays cheap.
# Names that left the public list still load, with a DeprecationWarning.
__getattr__, __dir__ = lazy_exports(__name__, {
    "fixed_width_to_parquet": "dpknn.schema._fixed_width",
    "write_coded": "dpknn.schema._coded_files",
    "read_coded": "dpknn.schema._coded_files",
    "schema_from_codebook": "dpknn.schema._codebook",
    "read_codebook": "dpknn.schema._codebook",
    "Categorical": "dpknn.schema._attributes",
    "Continuous": "dpknn.schema._attributes",
    "Ordinal": "dpknn.schema._attributes",
    "Schema": "dpknn.schema._attributes",
    "Universe": "dpknn.schema._attributes",
    "Discretization": "dpknn.schema._discretization",
    "geometric_edges": "dpknn.schema._discretization",
    "read_attributes": "dpknn.schema._discretization",
    "draft_schema": "dpknn.schema._draft",
}, moved={
    "EncodedData": "dpknn",
}, internal={
    "DRAFT_KEY": "dpknn.schema._attributes",
    "blank_outside_universes": "dpknn.schema._attributes",
    "check_draft": "dpknn.schema._attributes",
    "observed_outside_universes": "dpknn.schema._attributes",
    "warn_outside_universes": "dpknn.schema._attributes",
    "check_condition": "dpknn.schema._conditions",
    "condition_mask": "dpknn.schema._conditions",
    "conditions_mask": "dpknn.schema._conditions",
    "describe_conditions": "dpknn.schema._conditions",
    "public_conditions": "dpknn.schema._conditions",
    "check_attributes": "dpknn.schema._discretization",
    "SchemaDraft": "dpknn.schema._draft",
    "diameter": "dpknn.schema._geometry",
    "embed": "dpknn.schema._geometry",
    "one_hot": "dpknn.schema._geometry",
    "query_until_certified": "dpknn.schema._geometry",
    "scaled_column": "dpknn.schema._geometry",
    "squared_distance": "dpknn.schema._geometry",
    "count_tables": "dpknn.schema._marginals",
    "extended_codes": "dpknn.schema._marginals",
    "observed_block": "dpknn.schema._marginals",
})
