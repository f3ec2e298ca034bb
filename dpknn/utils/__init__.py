"""Helpers shared by the package: parameter validation, progress bars, file output, figures."""
