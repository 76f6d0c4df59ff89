"""``python -m syncdoctor ...``, as used by ``torchrun -m syncdoctor probe``."""

from syncdoctor.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
