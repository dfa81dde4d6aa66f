"""The one exception type the command line turns into a one-line message and exit status 2."""


class PerflabError(Exception):
    """Bad input or an unusable machine: the message says what is wrong and how to fix it.

    The CLI prints ``perflab: error: <message>`` and exits with status 2, without a traceback.
    Raise it only after whatever was already measured has been committed to the store.
    """

    exit_code = 2


class Unsupported(Exception):
    """A feature this machine cannot provide (no x32 kernel, no hardware counters, one NUMA node).

    Studies catch it, print its one-line reason, and carry on with what can be measured.
    """
