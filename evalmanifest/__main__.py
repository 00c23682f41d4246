from evalmanifest.cli import main

main()
