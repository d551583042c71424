"""The compiled CPU kernel library (libms_groupnorm_cpu.so) is placed here by setup.py."""
