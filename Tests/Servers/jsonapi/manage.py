#!/usr/bin/env python3
"""Django's command-line utility for the JSON:API test server (a blog)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "blog_project.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
