"""Run DataSynthesizer's correlated attribute mode on a table of integer codes (in its own Python).

Usage: python ds_peer.py CODES.csv DOMAIN.json EPSILON SEED OUT.csv [DEGREE]

CODES.csv holds one integer code per cell (a missing cell is its attribute's last code, as for
the private-pgm peers); every column is declared categorical. DEGREE is the Bayesian network's
degree k (default 2, DataSynthesizer's usual setting). Prints the seconds that fit + sample took.

DataSynthesizer (PyPI ``DataSynthesizer``, 0.1.13) is not part of dpknn and is not a like-for-like
privacy peer: it reads each attribute's categories from the data rather than taking a public
domain, so a code absent from the data is never drawn (benchmarks/README.md).
"""

import json
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
from DataSynthesizer.DataDescriber import DataDescriber
from DataSynthesizer.DataGenerator import DataGenerator

codes_path, domain_path, eps, seed, out_path = sys.argv[1:6]
degree = int(sys.argv[6]) if len(sys.argv) > 6 else 2
dom = json.loads(Path(domain_path).read_text())
n = len(pd.read_csv(codes_path))
t = time.perf_counter()
with tempfile.TemporaryDirectory() as tmp:
    description = str(Path(tmp) / "description.json")
    describer = DataDescriber(category_threshold=max(dom.values()) + 1)
    describer.describe_dataset_in_correlated_attribute_mode(
        dataset_file=codes_path, k=degree, epsilon=float(eps), seed=int(seed),
        attribute_to_is_categorical={c: True for c in dom}, attribute_to_is_candidate_key={c: False for c in dom})
    describer.save_dataset_description_to_file(description)
    generator = DataGenerator()
    generator.generate_dataset_in_correlated_attribute_mode(n, description, seed=int(seed))
    synth = generator.synthetic_dataset
print(time.perf_counter() - t)
synth.to_csv(out_path, index=False)
