import sys

from dpknn.cli._main import main

sys.exit(main())
