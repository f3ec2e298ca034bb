import sys

from dpknn.cli.main import main

sys.exit(main())
