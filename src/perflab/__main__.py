"""The `perflab` command (the console script) and `python -m perflab`."""

from perflab import startup

startup.begin()  # before the imports it is about (perflab/startup.py)

from perflab.cli import main  # noqa: E402 - startup.begin() must run first

if __name__ == "__main__":
    main()
