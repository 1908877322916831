from sleuth.cli.main import main

main()
